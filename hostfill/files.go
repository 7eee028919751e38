package hostfill

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/rawfiles"
)

// fileKind is what a packed file is.
type fileKind int

// Kinds of files packs carry. XLA's kernel cache file is not one: it is a
// single file XLA extends, merged part by part (rawfiles.Mirror).
const (
	fileNone fileKind = iota
	// fileJAX is a JAX executable entry, "<module>-<hash>-cache".
	fileJAX
	// fileAutotune is an XLA autotune result file.
	fileAutotune
	// fileEntry is an xlacache entry, "<tier>/<shard>/<key>".
	fileEntry
)

var kindNames = [...]string{"other", "jax", "autotune", "entry"}

// String names the kind for logs and stats.
func (k fileKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// classify says which kind of packed file rel (slash-separated, relative
// to the cache directory) is, from its name alone; fileNone for anything
// else: JAX's "-atime" files and lock file (JAX writes them itself;
// without a size bound it never reads them), temporary files, state.
func classify(rel string) fileKind {
	return classifyAs(rel, layout.Classify(rel))
}

// classifyAs is classify for a file layout has classified as c (as
// layout.Walk does): the packed kinds are layout's JAX entries, XLA's
// autotune results directly in their directory, and xlacache's entries.
func classifyAs(rel string, c layout.Class) fileKind {
	if layout.ValidRel(rel) != nil || len(rel) > maxNameLen {
		return fileNone
	}
	switch c.Kind {
	case layout.JAXEntry:
		return fileJAX
	case layout.XLAAutotune:
		if dir, base := path.Split(rel); dir == layout.XLAAutotuneDir+"/" && rawfiles.ValidAutotuneName(base) {
			return fileAutotune
		}
	case layout.Entry:
		// A backend's tiers that travel are its autotune and kernels
		// subcaches: the walk (layout.OwnedTopDir) looks nowhere else but
		// its aliases, which stay local as they do with the shared tier
		// (cache/alias.go), so a pack member named for another one would
		// be written where no scan, trim or lookup ever finds it.
		if _, sub, nested := strings.Cut(c.Tier, "/"); nested && sub != layout.AutotuneSub && sub != layout.KernelsSub {
			return fileNone
		}
		return fileEntry
	}
	return fileNone
}

// maxFileSize bounds a file that travels in a pack: the largest JAX
// executables are a few gigabytes, and a pack is held in memory.
const maxFileSize = 2 << 30

// errIncomplete marks a local file that is not (yet) a whole file of its
// kind: a JAX entry still being written in place, say. It is never
// published.
var errIncomplete = errors.New("hostfill: file incomplete or not of its kind")

// checkContent verifies that data is a whole, well-formed file of kind
// named rel. A JAX entry is whole when its zstd or zlib stream decodes to
// its end and holds the 4-byte compile time and an executable (JAX writes
// entries in place, so a partial file is a truncated stream); autotune
// results and xlacache entries are installed by rename, and are checked
// for their format.
func checkContent(kind fileKind, rel string, data []byte, signingKey *sign.Keys) error {
	var err error
	switch kind {
	case fileJAX:
		// Streamed: the decompressed executable is never held.
		err = jaxcache.CheckComplete(data)
	case fileAutotune:
		err = rawfiles.VerifyAutotuneFile(data)
	case fileEntry:
		_, err = entry.DecodeAs(data, layout.Classify(rel).Key, signingKey)
	default:
		err = errors.New("not a packed kind")
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errIncomplete, rel, err)
	}
	return nil
}

// sealKey is the entry key a packed file is sealed under: the name binds
// the bytes to the path, so a signed file cannot be replayed under
// another name.
func sealKey(rel string) string { return "hostfill:" + rel }

// seal wraps a file's content for a pack.
func seal(rel string, data []byte, signingKey *sign.Keys, now time.Time) (Member, error) {
	sealed, err := entry.Encode(entry.Header{Key: sealKey(rel), Created: now}, data, signingKey)
	if err != nil {
		return Member{}, err
	}
	return Member{Record: Record{Name: rel, Digest: sha256.Sum256(data)}, Sealed: sealed}, nil
}

// unseal verifies a pack member and returns its content, checked against
// its record's digest and its kind's format.
func unseal(m Member, signingKey *sign.Keys) ([]byte, fileKind, error) {
	kind := classify(m.Name)
	if kind == fileNone {
		return nil, kind, fmt.Errorf("%w: %s is not a file packs carry", errBadPack, m.Name)
	}
	e, err := entry.DecodeAs(m.Sealed, sealKey(m.Name), signingKey)
	if err != nil {
		return nil, kind, fmt.Errorf("%s: %w", m.Name, err)
	}
	if sha256.Sum256(e.Payload) != m.Digest {
		return nil, kind, fmt.Errorf("%w: %s: content does not match the index digest", errBadPack, m.Name)
	}
	if err := checkContent(kind, m.Name, e.Payload, signingKey); err != nil {
		return nil, kind, err
	}
	return e.Payload, kind, nil
}

// readLocal reads a local file to publish. A JAX entry is read without
// moving its access time (jaxcache.ReadEntry): that is how exec tells
// which entries JAX loaded, and publishing one is not a load.
func readLocal(root *os.Root, f localFile) ([]byte, error) {
	if f.kind == fileJAX {
		return jaxcache.ReadEntry(root, f.rel, maxFileSize)
	}
	return atomicfile.ReadRegular(root, f.rel, maxFileSize)
}

// localFile is a candidate for publishing found by a scan.
type localFile struct {
	rel     string
	kind    fileKind
	size    int64
	modTime time.Time
}

// scanLocal lists the packed kinds of files of the directory root: the
// files layout.Walk reaches (top-level JAX entries, the autotune
// directory, xlacache's tiers) that classifyAs calls packed, so that a
// pack carries exactly the entries trims, verifies and exports see.
func scanLocal(ctx context.Context, root *os.Root) ([]localFile, error) {
	return scanPaths(ctx, root, []string{"."})
}

// scanPaths lists the packed kinds of files at rels (slash-separated,
// relative to root; "." is the whole directory), each walked by
// layout.WalkUnder: a file is looked at alone, a directory walked as
// scanLocal walks the directory's, and a path layout.Walk would not reach
// (the state directory, a directory the cache does not own) not at all.
// Paths removed meanwhile, and directories that cannot be read, are
// skipped; an unreadable cache directory is an error.
func scanPaths(ctx context.Context, root *os.Root, rels []string) ([]localFile, error) {
	var out []localFile
	// A file named by an event may also be under a directory named by
	// another: it is listed once (a pack names each file once).
	seen := map[string]bool{}
	visit := func(f layout.File, err error) error {
		if err != nil {
			if f.Rel == "." {
				return err
			}
			return nil
		}
		if !f.Entry.Type().IsRegular() || seen[f.Rel] {
			return nil
		}
		seen[f.Rel] = true
		k := classifyAs(f.Rel, f.Class)
		if k == fileNone {
			return nil
		}
		info, err := f.Entry.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		out = append(out, localFile{rel: f.Rel, kind: k, size: info.Size(), modTime: info.ModTime()})
		return nil
	}
	for _, rel := range rels {
		if err := layout.WalkUnder(ctx, root.FS(), rel, visit); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Seal wraps a file's content (rel is its path relative to the cache
// directory) as a pack member, signed with signingKey when it is set.
func Seal(rel string, data []byte, signingKey *sign.Keys) (Member, error) {
	return seal(rel, data, signingKey, time.Now())
}

// ObjectNames returns the store names of pack and of its index.
func ObjectNames(pack []byte) (packName, indexName string) {
	return layout.PackObjects(packID(pack))
}

// openPayload returns a sealed member's payload, verified by its entry
// checksum (and signature) only.
func openPayload(m Member, signingKey *sign.Keys) ([]byte, error) {
	e, err := entry.DecodeAs(m.Sealed, sealKey(m.Name), signingKey)
	if err != nil {
		return nil, err
	}
	return e.Payload, nil
}
