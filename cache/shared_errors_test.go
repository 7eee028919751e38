package cache

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
)

// failingOpen is a store whose reads fail with an error that is neither
// "not there" nor "unavailable" (a server's 500, say).
type failingOpen struct {
	blob.Store
	err error
}

func (s failingOpen) Open(context.Context, string) (io.ReadCloser, blob.Info, error) {
	return nil, blob.Info{}, s.err
}

// One failed read of the shared tier is one failure: counted once, as
// "shared", in the tier that asked (errors_total sums every failure once).
func TestSharedReadFailureCountedOnce(t *testing.T) {
	o := testOptions(t.TempDir())
	o.Subcaches, o.SubcachesExplicit = nil, true
	o.Role = config.RoleReader // no publish: only the lookup fails
	store := failingOpen{Store: memblob.New(memblob.Options{}), err: errors.New("500 internal error")}
	c := mustOpen(t, o, nil, WithShared(store))
	compileOK(t, c, &fakeBackend{}, Program{Name: "f", Text: []byte("p")})
	st := c.Stats()
	var n int64
	for _, v := range st.Errors {
		n += v
	}
	if n != 1 || st.Errors["shared"] != 1 || st.TierErrors[ExecutablesTier]["shared"] != 1 {
		t.Errorf("errors %v by tier %v: want one failure, shared, in %s", st.Errors, st.TierErrors, ExecutablesTier)
	}
}

// Bytes uploaded count only objects this process published: the first
// writer of a key counts its entry's size, a second writer that loses
// first-writer-wins counts nothing, and a reader never uploads.
func TestSharedBytesWrittenOnlyWhenPublished(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	open := func(role config.Role) *Cache {
		o := testOptions(t.TempDir())
		o.Subcaches, o.SubcachesExplicit = nil, true
		o.Role = role
		return mustOpen(t, o, nil, WithShared(shared))
	}
	a, b, r := open(config.RoleWriter), open(config.RoleWriter), open(config.RoleReader)
	k := NewKey("k", nil)
	payload := bytes.Repeat([]byte("x"), 3000)
	ctx := context.Background()
	for _, c := range []*Cache{a, b, r} {
		if err := c.Tier(ExecutablesTier).Put(ctx, k, payload, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	info, err := shared.Stat(ctx, a.Tier(ExecutablesTier).objectName(k))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Stats(); got.SharedBytesWritten != info.Size || got.Tiers[ExecutablesTier].SharedBytesWritten != info.Size {
		t.Errorf("first writer uploaded %d (tier %d), want the object's %d bytes", got.SharedBytesWritten, got.Tiers[ExecutablesTier].SharedBytesWritten, info.Size)
	}
	if got := b.Stats().SharedBytesWritten; got != 0 {
		t.Errorf("second writer counted %d uploaded bytes for an object it did not publish", got)
	}
	if got := r.Stats().SharedBytesWritten; got != 0 {
		t.Errorf("reader counted %d uploaded bytes", got)
	}
}
