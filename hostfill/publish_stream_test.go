package hostfill

import (
	"context"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestPublishChecksJAXEntryStreaming: the publisher checks that a JAX
// entry is complete by decompressing it to nowhere: a small entry that
// decompresses to 128 MiB costs it far less than 128 MiB of memory (the
// whole output was held before), and it is still published.
func TestPublishChecksJAXEntryStreaming(t *testing.T) {
	const exeSize = 128 << 20
	for _, c := range []jaxcache.Codec{jaxcache.CodecZstd, jaxcache.CodecZlib} {
		t.Run(string(c), func(t *testing.T) {
			h := newHost(t, nil)
			h.o.Kernels = false
			data := jaxEntry(t, c, 3, make([]byte, exeSize))
			if len(data) > exeSize/100 {
				t.Fatalf("entry of %d bytes: want a small one", len(data))
			}
			h.write(t, jaxKey("jit_big", 1)+"-cache", data)
			p := newPublisher(memblob.New(memblob.Options{}), h.o, nil)
			var err error
			n := memtest.Allocated(func() { err = p.Publish(context.Background(), false) })
			if err != nil {
				t.Fatal(err)
			}
			if st := p.Stats(); st.Files != 1 {
				t.Fatalf("entry not published: %+v", st)
			}
			t.Logf("%s: publishing a %d-byte entry of %d MiB allocated %.1f MiB", c, len(data), exeSize>>20, float64(n)/(1<<20))
			if n > exeSize/4 {
				t.Errorf("publishing allocated %d bytes: the decompressed entry (%d bytes) was held", n, exeSize)
			}
		})
	}
}
