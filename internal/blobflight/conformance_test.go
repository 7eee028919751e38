package blobflight_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/blobflight"
	"github.com/xlacache/xlacache/internal/flighttest"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/sharedtest"
)

// The lease objects pass the single-flight conformance suite: every flight
// is a Flight (a host) on one store.
func TestConformance(t *testing.T) {
	flighttest.Run(t, func(t *testing.T) flighttest.Medium {
		st := memblob.New(memblob.Options{})
		return flighttest.Medium{
			New: func(t *testing.T, o flighttest.Options) flighttest.Flight {
				return newFlight(t, st, o)
			},
			Abandon: func(t *testing.T, name string) { abandon(t, st, name) },
		}
	})
}

// The suite again on real servers, s3:// and gs://: the conditional
// writes leases rest on are the server's, not the in-memory store's. Each
// medium gets its own prefix on one server per kind.
func TestConformanceServers(t *testing.T) {
	sharedtest.Run(t, func(t *testing.T, k sharedtest.Kind) {
		srv := k.Start(t, "bkt")
		var n atomic.Int64
		flighttest.Run(t, func(t *testing.T) flighttest.Medium {
			st := sharedtest.Open(t, srv, "bkt", fmt.Sprintf("flight-%d", n.Add(1)))
			return flighttest.Medium{
				New: func(t *testing.T, o flighttest.Options) flighttest.Flight {
					return newFlight(t, st, o)
				},
				Abandon: func(t *testing.T, name string) { abandon(t, st, name) },
			}
		})
	})
}

// newFlight is a flight of the conformance suite on st.
func newFlight(t *testing.T, st blob.Store, o flighttest.Options) *blobflight.Flight {
	t.Helper()
	f, err := blobflight.New(blobflight.Options{Store: st, NoProbe: true, Stale: o.Stale, Wait: o.Wait,
		ReaderGrace: o.ReaderGrace, NoClaim: o.Reader, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// abandon leaves the lease object of a host that died holding it.
func abandon(t *testing.T, st blob.Store, name string) {
	t.Helper()
	rec := `{"host":"gone","pid":1,"token":"dead","name":"` + name + `"}` + "\n"
	if err := st.PutIfAbsent(context.Background(), layout.LeaseObject(name), []byte(rec)); err != nil {
		t.Fatal(err)
	}
}
