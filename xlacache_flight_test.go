package xlacache

import (
	"context"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/blobflight"
	"github.com/xlacache/xlacache/internal/flighttest"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/lease"
)

// The two-level flight passes the single-flight conformance suite: its
// flights alternate between two cache directories (two hosts of several
// processes each) that share one store.
func TestTwoLevelConformance(t *testing.T) {
	flighttest.Run(t, func(t *testing.T) flighttest.Medium {
		dirs := []string{t.TempDir(), t.TempDir()}
		st := memblob.New(memblob.Options{})
		n := 0
		return flighttest.Medium{
			New: func(t *testing.T, o flighttest.Options) flighttest.Flight {
				dir := dirs[n%len(dirs)]
				n++
				m, err := lease.New(lease.Options{Dir: dir, Stale: o.Stale, Wait: o.Wait, ReaderGrace: o.ReaderGrace,
					NoClaim: o.Reader, PollMax: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				f, err := blobflight.New(blobflight.Options{Store: st, NoProbe: true, Stale: o.Stale, Wait: o.Wait,
					ReaderGrace: o.ReaderGrace, NoClaim: o.Reader, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				two := newTwoLevel(m, f, !o.Reader)
				t.Cleanup(func() { two.Close() })
				return two
			},
			// A host that died holding the bucket's lease.
			Abandon: func(t *testing.T, name string) {
				rec := `{"host":"gone","pid":1,"token":"dead","name":"` + name + `"}` + "\n"
				if err := st.PutIfAbsent(context.Background(), layout.LeaseObject(name), []byte(rec)); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
