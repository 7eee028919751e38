//go:build unix

// Package lockedfile holds exclusive advisory locks (flock(2)) on files:
// the size ledger's read-modify-write, the one-trimmer-at-a-time trim lock,
// and JAX's ".lockfile", which JAX's LRUCache takes the same way (the
// py-filelock package's UnixFileLock). Lock files are opened with
// O_NOFOLLOW|O_NONBLOCK and must be regular files, so a symlink or FIFO
// planted at a lock path is refused rather than followed or waited on;
// with Options.Root the whole path is confined to a directory tree.
package lockedfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	pathpkg "path"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// ErrLocked is returned by TryLock when another process holds the lock.
var ErrLocked = errors.New("lockedfile: held by another process")

// File is an open, locked file. Unlock it exactly once.
type File struct {
	*os.File
}

// Unlock releases the lock and closes the file.
func (f *File) Unlock() error {
	uerr := flock(f.File, unix.LOCK_UN)
	cerr := f.File.Close()
	return errors.Join(uerr, cerr)
}

// Options say how the lock file is opened.
type Options struct {
	// Perm is the mode of a created file; 0 means 0600.
	Perm fs.FileMode
	// NoCreate makes a missing file an error wrapping fs.ErrNotExist
	// instead of creating it.
	NoCreate bool
	// ReadOnlyFallback opens the file read-only when it cannot be opened
	// for writing (another user's lock file): flock works on a read-only
	// descriptor.
	ReadOnlyFallback bool
	// Root, when set, confines the lock file to the tree it opens: the
	// path is then slash-separated and relative to Root, and a symbolic
	// link anywhere on it (not only at its end) is refused rather than
	// followed, so a planted link can neither redirect the lock outside
	// the tree nor make a lock call create a file elsewhere.
	Root *os.Root
}

func open(path string, o Options) (*os.File, error) {
	flags := os.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	if !o.NoCreate {
		flags |= os.O_CREATE
	}
	perm := o.Perm
	if perm == 0 {
		perm = 0o600
	}
	openFile := os.OpenFile
	if o.Root != nil {
		// Every parent must be a real directory, not a link to one.
		if err := atomicfile.CheckDirIn(o.Root, pathpkg.Dir(path)); err != nil {
			return nil, err
		}
		if st, err := o.Root.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link: %w", path, unix.ELOOP)
		}
		openFile = o.Root.OpenFile
	}
	f, err := openFile(path, flags, perm)
	if err != nil && o.ReadOnlyFallback && errors.Is(err, fs.ErrPermission) {
		f, err = openFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%s is a symbolic link: %w", path, err)
		}
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file (%v)", path, st.Mode().Type())
		}
		return nil, err
	}
	return f, nil
}

// Lock opens path and blocks until it holds an exclusive lock on it.
func Lock(path string, o Options) (*File, error) {
	f, err := open(path, o)
	if err != nil {
		return nil, err
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &File{f}, nil
}

// TryLock is Lock without waiting: it returns an error wrapping ErrLocked
// when another process holds the lock.
func TryLock(path string, o Options) (*File, error) {
	f, err := open(path, o)
	if err != nil {
		return nil, err
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("locking %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &File{f}, nil
}

// LockWait retries TryLock until it succeeds, timeout passes (an error
// wrapping ErrLocked) or ctx is done. It polls rather than blocking in
// flock so that both bounds hold.
func LockWait(ctx context.Context, path string, o Options, timeout time.Duration) (*File, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		f, err := TryLock(path, o)
		if err == nil || !errors.Is(err, ErrLocked) {
			return f, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w for more than %v", err, timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
