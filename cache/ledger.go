//go:build unix

package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/xlacache/xlacache/internal/lockedfile"
)

// ledger is the size ledger: the file (layout's LedgerFile) holds the
// running size total of the cache directory and when it was last
// reconciled with a full scan: 16 bytes, little-endian int64 bytes then
// int64 Unix nanoseconds. Writers update it under an exclusive flock so
// that a put costs a constant few system calls however many entries exist.
// A torn or lost update only skews the total until the next reconcile
// scan, which rewrites it.
//
// The file is opened for each update rather than held open: a descriptor
// open for writing would keep the filesystem from being remounted
// read-only, and a ledger removed by `xlacache clear` is simply recreated.
type ledger struct {
	mu   sync.Mutex // serializes this process's updates
	root *os.Root   // the cache directory
	path string     // relative to root
	mode os.FileMode
	f    *os.File // set while locked
}

// openLedger opens the ledger file at path (layout.LedgerRel) in root.
func openLedger(root *os.Root, path string, mode os.FileMode) (*ledger, error) {
	l := &ledger{root: root, path: path, mode: mode}
	// Create it now so that an unusable directory shows up at Open.
	if err := l.locked(func() error { return nil }); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *ledger) close() error { return nil }

// locked runs fn while holding both the in-process and the cross-process
// lock, with l.f open.
func (l *ledger) locked(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := lockedfile.Lock(l.path, lockedfile.Options{Perm: l.mode, Root: l.root})
	if err != nil {
		return fmt.Errorf("size ledger: %w", err)
	}
	defer f.Unlock()
	l.f = f.File
	defer func() { l.f = nil }()
	return fn()
}

func (l *ledger) readLocked() (int64, time.Time, error) {
	var b [16]byte
	n, err := l.f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, time.Time{}, fmt.Errorf("reading size ledger: %w", err)
	}
	if n < 16 {
		return 0, time.Time{}, nil
	}
	total := int64(binary.LittleEndian.Uint64(b[:8]))
	if total < 0 {
		total = 0
	}
	return total, time.Unix(0, int64(binary.LittleEndian.Uint64(b[8:]))), nil
}

func (l *ledger) writeLocked(total int64, scanned time.Time) error {
	if total < 0 {
		total = 0
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(total))
	var ns int64
	if !scanned.IsZero() {
		ns = scanned.UnixNano()
	}
	binary.LittleEndian.PutUint64(b[8:], uint64(ns))
	if _, err := l.f.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("writing size ledger: %w", err)
	}
	return nil
}

// read returns the running total and the last reconcile time.
func (l *ledger) read() (total int64, scanned time.Time, err error) {
	err = l.locked(func() error {
		total, scanned, err = l.readLocked()
		return err
	})
	return total, scanned, err
}

// add adjusts the total by delta and returns the new total.
func (l *ledger) add(delta int64) (int64, error) {
	var total int64
	err := l.locked(func() error {
		cur, scanned, err := l.readLocked()
		if err != nil {
			return err
		}
		total = cur + delta
		return l.writeLocked(total, scanned)
	})
	return total, err
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
