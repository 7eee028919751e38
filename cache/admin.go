package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/inuse"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// Usage is what a scan of a cache directory found, per area.
type Usage struct {
	// Areas maps an area name to its files and bytes. Areas are the tiers
	// ("executables", "cpu/autotune", ...), XLA's raw subcaches (by their
	// XLA names) and "quarantine" (layout.Class.Area); files the layout
	// does not explain are not counted.
	Areas map[string]TierStats `json:"areas"`
	// Files and Bytes total every area.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Scan counts files and bytes under dir by area. It reads nothing but
// directory metadata and writes nothing. A symlinked dir is followed (the
// tree under it is not).
func Scan(ctx context.Context, dir string) (Usage, error) {
	u := Usage{Areas: map[string]TierStats{}}
	sc, root, err := scanDir(ctx, dir)
	if err != nil {
		return u, fmt.Errorf("scan: %w", err)
	}
	root.Close()
	for _, f := range sc.files {
		a := f.class.Area
		t := u.Areas[a]
		t.Entries++
		t.Bytes += f.size
		u.Areas[a] = t
		u.Files++
		u.Bytes += f.size
	}
	return u, nil
}

// EntryInfo describes one stored entry for `xlacache ls`.
type EntryInfo struct {
	// Tier is the tier name; Key the key text (the file name); Path the
	// absolute file path.
	Tier string `json:"tier"`
	Key  string `json:"key"`
	Path string `json:"path"`
	// Size is the file size; RawSize the payload size before compression.
	Size    int64 `json:"size"`
	RawSize int64 `json:"raw_size"`
	// CompileTime is the compile time recorded by the writer.
	CompileTime time.Duration `json:"compile_time_ns"`
	// Created is when the entry was written; LastUsed its modification
	// time (refreshed by writer hits at most hourly).
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
	// Signed reports an HMAC signature; Codec is "zstd" or "raw".
	Signed bool   `json:"signed"`
	Codec  string `json:"codec"`
	// Err is set when the header cannot be parsed (the entry is damaged).
	Err string `json:"error,omitempty"`
}

// List returns the entries of every xlacache tier under dir (XLA's raw
// subcaches are not xlacache entries and are left out), sorted by tier then
// key. Only headers are read.
func List(ctx context.Context, dir string) ([]EntryInfo, error) {
	sc, root, err := scanDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []EntryInfo
	// Odd files (a FIFO or symbolic link at an entry's path) are listed as
	// damaged, never opened.
	for i, f := range append(sc.odd, sc.files...) {
		if f.class.Kind != layout.Entry {
			continue
		}
		ei := EntryInfo{Tier: f.class.Tier, Key: f.class.Key, Path: f.path, Size: f.size, LastUsed: f.mtime}
		if i < len(sc.odd) {
			ei.Err = "not a regular file"
			out = append(out, ei)
			continue
		}
		h, _, err := readHeader(root, f.rel)
		if err != nil {
			ei.Err = err.Error()
		} else {
			ei.RawSize, ei.CompileTime, ei.Created, ei.Signed, ei.Codec = h.RawSize, h.CompileTime, h.Created, h.Signed, h.Codec.String()
			if h.Key != ei.Key {
				ei.Err = fmt.Sprintf("header names key %q", h.Key)
			}
		}
		out = append(out, ei)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tier != out[j].Tier {
			return out[i].Tier < out[j].Tier
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

// BadEntry is an entry that failed verification.
type BadEntry struct {
	// Tier, Path and Err say where the entry is and what is wrong with it.
	Tier string `json:"tier"`
	Path string `json:"path"`
	Err  string `json:"error"`
	// Kind classifies the failure like Stats.Errors.
	Kind string `json:"kind"`
	// KeyMismatch is set when the entry's checksum holds but its signature
	// does not verify with this key: it was signed with another key. Such
	// an entry is not damage and a repair leaves it in place.
	KeyMismatch bool `json:"key_mismatch,omitempty"`
	// Quarantined is where a repair moved it ("" when not repaired).
	Quarantined string `json:"quarantined,omitempty"`
}

// VerifyResult reports a verification pass.
type VerifyResult struct {
	Checked int        `json:"checked"`
	Bad     []BadEntry `json:"bad"`
	// KeyMismatches counts the entries of Bad signed with another key.
	KeyMismatches int `json:"key_mismatches,omitempty"`
	// StaleTemps counts stale temporary files a repair removed.
	StaleTemps int `json:"stale_temps,omitempty"`
	// Signers counts the entries that verified by the Ed25519 key id
	// (hex, public) that signed them: during a key rotation, how many
	// entries each key still vouches for.
	Signers map[string]int `json:"signers,omitempty"`
}

// ErrWrongKey is wrapped by Verify's error when every entry checked fails
// its signature while its checksum holds: the key this process was given
// is not the one the directory's entries were signed with (a mistyped
// XLACACHE_SIGNING_KEY, most likely). Verify then changes nothing.
var ErrWrongKey = errors.New("the signing key is wrong")

// Verify fully checks every entry of every xlacache tier (checksum, key
// matching its file name, decompression, and the signature when the options
// carry a signing key). With repair, bad entries are moved to quarantine;
// that needs a writer cache.
//
// An entry signed with another key (keyMismatch) is reported but never
// quarantined. When every entry checked fails that way, the key is wrong:
// Verify returns an error wrapping ErrWrongKey and changes nothing, not
// even with repair.
func (c *Cache) Verify(ctx context.Context, repair bool) (VerifyResult, error) {
	var res VerifyResult
	if c == nil || c.dir == "" {
		return res, errors.New("verify: no usable cache directory")
	}
	if repair && !c.writer {
		return res, fmt.Errorf("verify --repair %s: this process is a reader (role %s, index %d)", c.dir, c.opts.Role, c.opts.ProcessIndex)
	}
	if c.root == nil {
		return res, fmt.Errorf("verify: %s does not exist", c.dir)
	}
	sc, err := scanFiles(ctx, c.root, c.dir)
	if err != nil {
		return res, err
	}
	// Something other than a regular file where an entry belongs (a
	// FIFO, a symbolic link) is damage; it is never opened.
	var odd []fileInfo
	for _, f := range sc.odd {
		if f.class.Kind == layout.Entry {
			odd = append(odd, f)
		}
	}
	// First every entry is checked, then (repair) the damaged ones are
	// moved: whether the key is wrong is known only once all are checked.
	var badFiles []fileInfo
	for i, f := range append(odd, sc.files...) {
		if f.class.Kind != layout.Entry {
			continue
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Checked++
		var verr error
		if i < len(odd) {
			verr = fmt.Errorf("%w: %s is not a regular file", entry.ErrForeign, f.rel)
		} else {
			var id sign.KeyID
			var signed bool
			id, signed, verr = verifyFile(c.root, f.rel, c.signingKey)
			if signed {
				if res.Signers == nil {
					res.Signers = map[string]int{}
				}
				res.Signers[id.String()]++
			}
		}
		if verr == nil {
			continue
		}
		b := BadEntry{Tier: f.class.Tier, Path: f.path, Err: verr.Error(), Kind: decodeKind(verr), KeyMismatch: keyMismatch(verr)}
		if b.KeyMismatch {
			res.KeyMismatches++
		}
		res.Bad = append(res.Bad, b)
		badFiles = append(badFiles, f)
	}
	if res.KeyMismatches > 0 && res.KeyMismatches == res.Checked {
		return res, fmt.Errorf("verify %s: %w: all %d entries fail their signature check while their checksums hold, so they were signed with another key; check %s (or %s; for Ed25519, %s); nothing was changed",
			c.dir, ErrWrongKey, res.Checked, config.EnvSigningKey, config.EnvSigningKeyFile, config.EnvVerifyKeys)
	}
	if !repair {
		return res, nil
	}
	for i := range res.Bad {
		b, f := &res.Bad[i], badFiles[i]
		if b.KeyMismatch {
			continue // good with its own key: left in place
		}
		// The scan's view: a file replaced since (a writer's fresh
		// entry) is not the one found damaged and stays.
		dst, qerr := c.quarantine(b.Tier, f.path, f.info)
		if qerr != nil {
			b.Err += fmt.Sprintf(" (quarantine failed: %v)", qerr)
		}
		b.Quarantined = dst
	}
	guard := inuse.New(c.dir, c.root, 0, nil)
	for _, f := range sc.temps {
		if removeStaleTemp(guard, c.root, f, false) {
			res.StaleTemps++
		}
	}
	return res, nil
}

// verifyFile checks the entry at rel, and returns the Ed25519 key id
// that signed it when it verified with one (signed).
func verifyFile(root *os.Root, rel string, signingKey *sign.Keys) (id sign.KeyID, signed bool, err error) {
	data, err := readEntryIn(root, rel)
	if err != nil {
		return id, false, err
	}
	e, err := entry.Decode(data, signingKey)
	if err != nil {
		return id, false, err
	}
	if base := path.Base(rel); e.Key != base {
		return id, false, fmt.Errorf("%w: file %s holds key %q", entry.ErrCorrupt, base, e.Key)
	}
	if _, _, err := ParseKey(e.Key); err != nil {
		return id, false, fmt.Errorf("%w: %v", entry.ErrCorrupt, err)
	}
	return e.Signer, e.HasSigner, nil
}

// Clear removes everything xlacache keeps under dir: the executables tier,
// every backend tier, XLA's subcaches, the quarantine, the state
// directory and the lease directory. Other files are left alone, so pointing --dir at the wrong
// directory cannot wipe it.
func Clear(ctx context.Context, dir string) (removed int, err error) {
	root, dir, err := adminRoot(dir)
	if err != nil {
		return 0, fmt.Errorf("clear: %w", err)
	}
	defer root.Close()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("clear: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		name := e.Name()
		p := filepath.Join(dir, name)
		switch {
		case name == layout.StateDir, name == layout.LocksDir, name == layout.XLAKernelFile,
			layout.OwnedTopDir(name, p):
		default:
			continue
		}
		if err := root.RemoveAll(name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// ReadEntryFile reads the entry file at p without trusting its size: the
// header is parsed from a bounded prefix and the file is read whole only
// when the sizes it declares add up. Tools that copy entries (verify,
// sync, export) use it so that a hostile file cannot exhaust memory.
//
// A FIFO, socket, device or symbolic link at p is refused without being
// opened for blocking reads.
func ReadEntryFile(p string) ([]byte, error) {
	root, err := os.OpenRoot(filepath.Dir(p))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readEntryIn(root, filepath.Base(p))
}

// readEntryIn is ReadEntryFile for rel inside root.
func readEntryIn(root *os.Root, rel string) ([]byte, error) {
	f, st, err := atomicfile.OpenRegular(root, rel)
	if err != nil {
		if errors.Is(err, atomicfile.ErrNotRegular) {
			return nil, fmt.Errorf("%w: %v", entry.ErrForeign, err)
		}
		return nil, err
	}
	defer f.Close()
	return entry.Read(f, st.Size(), 0)
}

// FileUsage is one file that counts toward the size bound.
type FileUsage struct {
	// Path is absolute; Rel is slash-separated and relative to the cache
	// directory; ModTime orders eviction (least recently used first).
	Path, Rel string
	Size      int64
	ModTime   time.Time
}

// Files lists every file under dir that counts toward the size bound, and
// that trims and Prune may evict: tier entries, XLA's subcaches and the
// quarantine. It reads only directory metadata.
func Files(ctx context.Context, dir string) ([]FileUsage, error) {
	sc, root, err := scanDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	root.Close()
	out := make([]FileUsage, len(sc.files))
	for i, f := range sc.files {
		out[i] = FileUsage{Path: f.path, Rel: f.rel, Size: f.size, ModTime: f.mtime}
	}
	return out, nil
}

// scanDir is scanFiles for an admin command's directory argument, resolved
// (a symlinked cache directory is a normal setup). The caller closes the
// returned root.
func scanDir(ctx context.Context, dir string) (scan, *os.Root, error) {
	root, resolved, err := adminRoot(dir)
	if err != nil {
		return scan{}, nil, err
	}
	sc, err := scanFiles(ctx, root, resolved)
	if err != nil {
		root.Close()
		return scan{}, nil, err
	}
	return sc, root, nil
}
