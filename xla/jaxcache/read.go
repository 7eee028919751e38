package jaxcache

import (
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"github.com/xlacache/xlacache/internal/atomicfile"
)

// xlacache's own reads of JAX entries go through OpenEntry, OpenEntryPath,
// ReadEntry and ReadEntryPath: every one of them (exec's publisher,
// verify, ls, explain, export) opens the file with O_NOATIME, so that the
// entry's access time keeps meaning "JAX loaded it" (see LoadState). When
// the entry is not this user's, the kernel refuses O_NOATIME and the read
// is an ordinary one, which can count as a load: said once per process.

var foreignOnce sync.Once

// noteKept logs, once per process, that a read of a JAX entry moved its
// access time.
func noteKept(kept bool, path string) {
	if kept {
		return
	}
	foreignOnce.Do(func() {
		slog.Info("xlacache: reading a JAX entry another user owns updates its access time, so this read may count as a load (O_NOATIME is the owner's)", "path", path)
	})
}

// OpenEntry opens the JAX entry rel under root for reading, refusing
// anything but a regular file (atomicfile.OpenRegular), without moving
// its access time where the kernel allows.
func OpenEntry(root *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	f, st, kept, err := atomicfile.OpenRegularNoAtime(root, rel)
	if err == nil {
		noteKept(kept, rel)
	}
	return f, st, err
}

// OpenEntryPath is OpenEntry for a host path.
func OpenEntryPath(p string) (*os.File, fs.FileInfo, error) {
	f, st, kept, err := atomicfile.OpenRegularPathNoAtime(p)
	if err == nil {
		noteKept(kept, p)
	}
	return f, st, err
}

// ReadEntry reads the JAX entry rel under root whole (at most limit
// bytes, limit > 0) as OpenEntry opens it.
func ReadEntry(root *os.Root, rel string, limit int64) ([]byte, error) {
	b, kept, err := atomicfile.ReadRegularNoAtime(root, rel, limit)
	if err == nil {
		noteKept(kept, rel)
	}
	return b, err
}

// ReadEntryPath is ReadEntry for a host path.
func ReadEntryPath(p string, limit int64) ([]byte, error) {
	b, kept, err := atomicfile.ReadRegularPathNoAtime(p, limit)
	if err == nil {
		noteKept(kept, p)
	}
	return b, err
}
