// Package memblob is an in-memory blob.Store: for tests of code that uses a
// shared store, and for programs that want the shared tier's behaviour
// within one process. It behaves like the S3 store (first writer wins,
// listing in name order, the same errors) and can be made to fail, to test
// how callers ride out an outage.
package memblob

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/xlacache/xlacache/blob"
)

var _ blob.Store = (*Store)(nil)

// Options configures a Store.
type Options struct {
	// MaxObjectSize bounds what Get returns; larger objects give
	// blob.ErrTooLarge. Zero means unbounded.
	MaxObjectSize int64
}

type object struct {
	data    []byte
	modTime time.Time
	etag    string
}

// Store is an in-memory blob.Store, safe for concurrent use. The zero value
// is not usable; call New.
type Store struct {
	opts Options

	mu    sync.Mutex
	objs  map[string]object
	fail  error // returned by every call while set (SetUnavailable)
	calls map[string]int
}

// New returns an empty Store.
func New(opts Options) *Store {
	return &Store{opts: opts, objs: map[string]object{}, calls: map[string]int{}}
}

// String names the store in logs.
func (s *Store) String() string { return "memblob" }

// SetUnavailable makes every later call fail with an error wrapping
// blob.ErrUnavailable (and err, when not nil) until it is called with down
// false: a store that has gone down, for tests of outages.
func (s *Store) SetUnavailable(down bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !down:
		s.fail = nil
	case err != nil:
		s.fail = fmt.Errorf("%w: %w", blob.ErrUnavailable, err)
	default:
		s.fail = fmt.Errorf("%w: memblob set unavailable", blob.ErrUnavailable)
	}
}

// Calls returns how many times the method named op ("get" for Get and
// Open, "put", "replace", "stat", "list", "delete") reached the store, failed calls included: tests use it
// to check that a cached or guarded caller did not call at all.
func (s *Store) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Len returns the number of stored objects.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objs)
}

// PutRaw stores data under name, replacing any object and skipping name
// validation: it plays a foreign tool that wrote the store by other means,
// so tests can check that readers refuse what they must not trust.
func (s *Store) PutRaw(name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[name] = newObject(data)
}

func newObject(data []byte) object {
	sum := md5.Sum(data)
	return object{data: bytes.Clone(data), modTime: time.Now(), etag: hex.EncodeToString(sum[:])}
}

// enter starts a call of method verb, counted as op: it checks name (an
// object name or a List prefix) with valid, takes the lock and returns
// the error every call of the moment gets. On success the caller holds
// the lock and unlocks it.
func (s *Store) enter(ctx context.Context, verb, op, name string, valid func(string) error) error {
	if err := valid(name); err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	s.mu.Lock()
	s.calls[op]++
	err := ctx.Err()
	if err == nil {
		err = s.fail
	}
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	return nil
}

// Get implements blob.Store.
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	if err := s.enter(ctx, "get", "get", name, blob.ValidName); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	o, ok := s.objs[name]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", name, blob.ErrNotExist)
	}
	if s.opts.MaxObjectSize > 0 && int64(len(o.data)) > s.opts.MaxObjectSize {
		return nil, fmt.Errorf("get %s: %w: more than %d bytes", name, blob.ErrTooLarge, s.opts.MaxObjectSize)
	}
	return bytes.Clone(o.data), nil
}

// Open implements blob.Store. The reader sees the object as it was when
// opened, as a reader of an S3 object sees the version it asked for.
func (s *Store) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	if err := s.enter(ctx, "open", "get", name, blob.ValidName); err != nil {
		return nil, blob.Info{}, err
	}
	defer s.mu.Unlock()
	o, ok := s.objs[name]
	if !ok {
		return nil, blob.Info{}, fmt.Errorf("open %s: %w", name, blob.ErrNotExist)
	}
	if s.opts.MaxObjectSize > 0 && int64(len(o.data)) > s.opts.MaxObjectSize {
		return nil, blob.Info{}, fmt.Errorf("open %s: %w: %d bytes, more than %d", name, blob.ErrTooLarge, len(o.data), s.opts.MaxObjectSize)
	}
	// Stored slices are never written after they are stored, so the
	// reader needs no copy.
	return io.NopCloser(bytes.NewReader(o.data)), info(name, o), nil
}

// ReplaceIfMatch implements blob.Store.
func (s *Store) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	if err := s.enter(ctx, "replace", "replace", name, blob.ValidName); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	o, ok := s.objs[name]
	if !ok {
		return "", fmt.Errorf("replace %s: %w: no such object", name, blob.ErrPrecondition)
	}
	if o.etag != etag {
		return "", fmt.Errorf("replace %s: %w: ETag is %q, not %q", name, blob.ErrPrecondition, o.etag, etag)
	}
	o = newObject(data)
	s.objs[name] = o
	return o.etag, nil
}

// PutIfAbsent implements blob.Store.
func (s *Store) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if err := s.enter(ctx, "put", "put", name, blob.ValidName); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.objs[name]; ok {
		return fmt.Errorf("put %s: %w", name, blob.ErrExist)
	}
	s.objs[name] = newObject(data)
	return nil
}

// Stat implements blob.Store.
func (s *Store) Stat(ctx context.Context, name string) (blob.Info, error) {
	if err := s.enter(ctx, "stat", "stat", name, blob.ValidName); err != nil {
		return blob.Info{}, err
	}
	defer s.mu.Unlock()
	o, ok := s.objs[name]
	if !ok {
		return blob.Info{}, fmt.Errorf("stat %s: %w", name, blob.ErrNotExist)
	}
	return info(name, o), nil
}

func info(name string, o object) blob.Info {
	return blob.Info{Name: name, Size: int64(len(o.data)), ModTime: o.modTime, ETag: o.etag}
}

// List implements blob.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	if err := s.enter(ctx, "list", "list", prefix, blob.ValidPrefix); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []blob.Info
	for name, o := range s.objs {
		if strings.HasPrefix(name, prefix) {
			out = append(out, info(name, o))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete implements blob.Store.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := s.enter(ctx, "delete", "delete", name, blob.ValidName); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.objs, name)
	return nil
}

// Close does nothing: the objects stay, so that several caches (playing
// several hosts) can share one Store and each close it.
func (s *Store) Close() error { return nil }
