package cache

import (
	"context"
	"errors"
)

// ErrNotExist is returned (wrapped) by a SharedStore when an object is absent.
var ErrNotExist = errors.New("cache: object does not exist")

// ErrExist is returned (wrapped) by SharedStore.PutIfAbsent when another
// writer published the object first. First writer wins; it is not a failure.
var ErrExist = errors.New("cache: object already exists")

// ErrUnavailable is returned (wrapped) by a SharedStore that cannot be
// reached or is being skipped after a recent failure. The store logs that
// condition itself, once; the cache counts such errors without logging them
// again, so an unreachable server costs one log line, not one per lookup.
var ErrUnavailable = errors.New("cache: shared store unavailable")

// SharedStore is a tier shared between hosts (an S3-compatible object store)
// that sits behind the node-local directory. Object names are slash-separated
// paths relative to the cache directory, such as "executables/<key>" or
// "cpu/kernels/<key>". Every call must honour ctx and bounded timeouts: an
// unreachable store must never hang a compile.
type SharedStore interface {
	// Get returns the object's bytes or an error wrapping ErrNotExist.
	Get(ctx context.Context, name string) ([]byte, error)
	// PutIfAbsent stores data unless the object exists (conditional put);
	// when it exists it returns an error wrapping ErrExist.
	PutIfAbsent(ctx context.Context, name string, data []byte) error
	// List returns the names of objects under prefix.
	List(ctx context.Context, prefix string) ([]string, error)
	// Close releases the store's resources.
	Close() error
}

// Flight coordinates processes (on one host or many, through the cache
// directory) that miss the same entry at once, so that one compiles and the
// rest load its result.
type Flight interface {
	// Acquire returns when one of three things is true:
	//   - ready() reports the entry is now present: release is nil, and the
	//     caller should read the entry;
	//   - this process holds the claim: release is non-nil, and the caller
	//     compiles, publishes, then calls release;
	//   - the bounded wait ran out, or claims are impossible (reader role,
	//     read-only directory): release is a non-nil no-op, and the caller
	//     compiles itself.
	// An error is returned only when ctx is done.
	Acquire(ctx context.Context, name string, ready func() bool) (release func(), err error)
}
