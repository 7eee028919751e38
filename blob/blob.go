// Package blob is the interface between xlacache and a shared object store
// (the tier shared between hosts): a flat namespace of objects named by
// slash-separated paths, published first-writer-wins (a conditional create)
// and only ever replaced by a conditional overwrite against the ETag of
// the object being replaced (ReplaceIfMatch): how a writer repairs a
// damaged object, and what leases in the store build on. Reads check an
// object's size before reading it (Open, Get): anyone who can write the
// bucket can plant objects of any size.
//
// The S3 implementation lives in internal/s3blob, the GCS one in
// internal/gcsblob, an in-memory one in blob/memblob, and the circuit breaker with per-call timeouts that keeps
// an unreachable store from slowing compiles wraps any Store (Guard).
// Every implementation returns the errors below (wrapped, with context), so
// callers test them with errors.Is whatever the store.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
)

// Errors every Store returns, wrapped; test them with errors.Is.
var (
	// ErrNotExist: the object is absent.
	ErrNotExist = errors.New("blob: object does not exist")
	// ErrExist: PutIfAbsent found the object already there. First writer
	// wins; it is not a failure.
	ErrExist = errors.New("blob: object already exists")
	// ErrUnavailable: the store cannot be reached, or is being skipped
	// after a recent failure. The store (or its Guard) logs that condition
	// itself, once, so callers count such errors without logging them
	// again: an unreachable server costs one log line, not one per lookup.
	ErrUnavailable = errors.New("blob: store unavailable")
	// ErrTooLarge: the object is larger than the store's read bound. The
	// store finds out from the object's size before reading its bytes.
	ErrTooLarge = errors.New("blob: object too large")
	// ErrPrecondition: ReplaceIfMatch found the object changed since its
	// ETag was read, or gone. Another writer acted first; like ErrExist it
	// is an answer, not a failure.
	ErrPrecondition = errors.New("blob: object changed or absent (precondition failed)")
)

// Info describes one object.
type Info struct {
	// Name is relative to the store (its bucket and prefix).
	Name string
	// Size is the object's length in bytes.
	Size int64
	// ModTime is when the object was last written, as the store reports it.
	ModTime time.Time
	// ETag is the store's version tag of the object, "" when it has none.
	ETag string
}

// Store is a shared object store. Object names are slash-separated
// relative paths (ValidName), such as "executables/<key>" or
// "cpu/kernels/<key>". Every method must honour ctx and bounded timeouts:
// an unreachable store must never hang a compile. Implementations are safe
// for concurrent use.
type Store interface {
	// Get returns the object's bytes, or an error wrapping ErrNotExist,
	// ErrTooLarge or ErrUnavailable. An object larger than the store's
	// read bound is refused from its size, before any of it is read.
	Get(ctx context.Context, name string) ([]byte, error)
	// Open returns the object's Info (size and ETag as the response that
	// carries the bytes reports them: one request, no race with a
	// replacement) and a reader of its bytes, before reading any, so a
	// caller can refuse an object by its size or by a prefix without
	// reading the rest. The reader yields at most Info.Size bytes and
	// fails if the object turns out longer; the caller must close it.
	// Errors are Get's; an object larger than the store's read bound is
	// refused with ErrTooLarge.
	Open(ctx context.Context, name string) (io.ReadCloser, Info, error)
	// PutIfAbsent stores data under name unless an object is already
	// there, in which case it returns an error wrapping ErrExist. Of two
	// concurrent writers of one name, exactly one wins.
	PutIfAbsent(ctx context.Context, name string, data []byte) error
	// ReplaceIfMatch overwrites the object with data if its ETag is still
	// etag (a conditional write, If-Match), and otherwise returns an error
	// wrapping ErrPrecondition: the object was replaced or deleted since
	// etag was read (an absent object is ErrPrecondition, never created).
	// Of concurrent replacers holding the same etag exactly one wins. It
	// is how a writer repairs an object that failed verification without
	// overwriting a good one another writer put there meanwhile. It
	// returns the new object's ETag ("" when the store reports none), so
	// that a writer can keep replacing its own object (a lease's
	// heartbeat) and lose as soon as anyone else writes it.
	ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error)
	// Stat returns the object's Info, or an error wrapping ErrNotExist.
	Stat(ctx context.Context, name string) (Info, error)
	// List returns the objects whose names start with prefix ("" for all),
	// in lexical order of name.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes the object; deleting an absent object is not an error.
	Delete(ctx context.Context, name string) error
	// Close releases the store's resources.
	Close() error
}

// ValidName checks an object name (or a prefix without its trailing slash):
// a clean slash-separated relative path with no empty, "." or ".."
// segment and no backslash, NUL or control character, so that it maps to
// exactly one object and, when mirrored to a local directory, cannot
// escape it.
func ValidName(name string) error { return layout.ValidRel(name) }

// ValidPrefix checks a List prefix: "" (every object), or a valid name
// with or without a trailing slash.
func ValidPrefix(prefix string) error {
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		return ValidName(p)
	}
	return nil
}

// ReadSized reads an object of info.Size bytes from r into a buffer
// allocated once at that size, refusing (ErrTooLarge) an object larger than
// limit (when limit > 0) before reading any of it. A body shorter or longer
// than info.Size is an error: the object changed under the reader or the
// store misreported it. Stores use it for Get; callers of Open use it once
// they have looked at Info.
func ReadSized(r io.Reader, info Info, limit int64) ([]byte, error) {
	if info.Size < 0 {
		return nil, fmt.Errorf("%s: store reports no size", info.Name)
	}
	if limit > 0 && info.Size > limit {
		return nil, fmt.Errorf("%s: %w: %d bytes, more than %d", info.Name, ErrTooLarge, info.Size, limit)
	}
	b := make([]byte, info.Size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%s: reading %d bytes: %w", info.Name, info.Size, err)
	}
	var one [1]byte
	if n, _ := io.ReadFull(r, one[:]); n != 0 {
		return nil, fmt.Errorf("%s: body longer than its %d bytes", info.Name, info.Size)
	}
	return b, nil
}
