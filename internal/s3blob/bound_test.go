package s3blob

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// TestOversizeObjectNotRead is issue 10 item 4: anyone who can write the
// bucket can plant a huge object under a predictable name. The store must
// refuse it from the size in the response headers, without reading the
// body, and read an object within the bound into one buffer of its size
// (io.ReadAll's doubling made a 3 GiB object cost 6.9 GB).
func TestOversizeObjectNotRead(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	const bound = 16 << 20
	s, g, _ := openTest(t, srv, "s3://bkt/bound", func(c *Config) { c.MaxObjectSize = bound })
	ctx := context.Background()
	big := bytes.Repeat([]byte{0xAB}, 4*bound)
	if err := s.PutIfAbsent(ctx, "executables/planted", big); err != nil {
		t.Fatal(err)
	}
	fits := bytes.Repeat([]byte{0xCD}, bound)
	if err := s.PutIfAbsent(ctx, "executables/fits", fits); err != nil {
		t.Fatal(err)
	}
	big = nil
	for _, st := range []struct {
		name string
		s    blob.Store
	}{{"store", s}, {"guarded", g}} {
		var err error
		n := memtest.Allocated(func() { _, err = st.s.Get(ctx, "executables/planted") })
		if !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("%s: Get of a %d-byte object with a %d-byte bound: %v, want ErrTooLarge", st.name, 4*bound, bound, err)
		}
		if n > 2<<20 {
			t.Errorf("%s: refusing the oversize object allocated %d bytes: it was read before being checked", st.name, n)
		}
		var got []byte
		n = memtest.Allocated(func() { got, err = st.s.Get(ctx, "executables/fits") })
		if err != nil || !bytes.Equal(got, fits) {
			t.Fatalf("%s: Get of an object at the bound: %d bytes, %v", st.name, len(got), err)
		}
		if n > bound+bound/4 {
			t.Errorf("%s: reading a %d-byte object allocated %d bytes, want about its size", st.name, bound, n)
		}
	}
}
