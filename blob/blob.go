// Package blob is the interface between xlacache and a shared object store
// (the tier shared between hosts): a flat namespace of immutable objects
// named by slash-separated paths, published first-writer-wins.
//
// The S3 implementation lives in internal/s3blob, an in-memory one in
// blob/memblob, and the circuit breaker with per-call timeouts that keeps
// an unreachable store from slowing compiles wraps any Store (Guard).
// Every implementation returns the errors below (wrapped, with context), so
// callers test them with errors.Is whatever the store.
package blob

import (
	"context"
	"errors"
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
	// ErrTooLarge: the object is larger than the store's read bound.
	ErrTooLarge = errors.New("blob: object too large")
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
	// ErrTooLarge or ErrUnavailable.
	Get(ctx context.Context, name string) ([]byte, error)
	// PutIfAbsent stores data under name unless an object is already
	// there, in which case it returns an error wrapping ErrExist. Of two
	// concurrent writers of one name, exactly one wins.
	PutIfAbsent(ctx context.Context, name string, data []byte) error
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
