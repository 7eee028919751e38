// Package layout is the one place that knows where things live under a
// cache directory: each tier and its two-hex-digit shards, XLA's own
// subcaches (under the names JAX and XLA give them), the state directory
// with the size ledger, statistics and locks, the single-flight leases, the
// quarantine and temporary files. It also classifies any path found there,
// so that scans, trims, exports and verifiers agree on what a file is.
//
// Layout of a cache directory:
//
//	<dir>/
//	  executables/<shard>/<key>                 xlacache's whole-program entries
//	  <backend>/autotune/<shard>/<key>          a backend's autotune tier
//	  <backend>/kernels/<shard>/<key>           a backend's kernel tier
//	  <backend>/aliases/<shard>/<key>           a backend's program-text aliases (local only)
//	  xla_gpu_per_fusion_autotune_cache_dir/    XLA's autotune cache (XLA owns the format)
//	  xla_gpu_kernel_cache_file                 XLA's kernel cache (XLA owns the format)
//	  quarantine/                               damaged entries moved aside
//	  locks/<hash>.lease                        single-flight leases
//	  .xlacache/ledger, stats.json, trim.lock   state of the writers
//	  .tmp-*                                    temporary files (any directory)
//
// The package computes names; the only I/O it does is OwnedTopDir's look
// into a directory and Walk, the one walk of a cache directory that every
// scan uses (walk.go). The shared store's object names are in bucket.go.
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Names of fixed paths directly under the cache directory.
const (
	// ExecutablesDir holds xlacache's own whole-program entries; it is also
	// the name of that tier.
	ExecutablesDir = "executables"
	// QuarantineDir receives corrupt, truncated and foreign entries.
	QuarantineDir = "quarantine"
	// StateDir holds the size ledger, the stats file and lock files.
	StateDir = ".xlacache"
	// LocksDir holds the single-flight lease files.
	LocksDir = "locks"
	// XLAAutotuneDir is XLA's per-fusion autotune cache directory
	// (DebugOptions.xla_gpu_per_fusion_autotune_cache_dir, field 310), at
	// the path JAX gives it under its cache directory.
	XLAAutotuneDir = "xla_gpu_per_fusion_autotune_cache_dir"
	// XLAKernelFile is XLA's kernel cache file
	// (DebugOptions.xla_gpu_kernel_cache_file, field 306), at the path JAX
	// gives it.
	XLAKernelFile = "xla_gpu_kernel_cache_file"
	// XLAAutotuneTmpDir is where XLA writes an autotune result before it
	// renames it into XLAAutotuneDir (autotuner_util.cc).
	XLAAutotuneTmpDir = "tmp"
	// XLAKernelTempInfix starts the name of the temporary file newer XLA
	// writes the kernel cache through: "xla_gpu_kernel_cache_file.tmp.*".
	XLAKernelTempInfix = ".tmp."
)

// Names inside StateDir.
const (
	// LedgerFile holds the running size total (see cache's ledger).
	LedgerFile = "ledger"
	// StatsFile holds the persisted hit/miss counters, as JSON.
	StatsFile = "stats.json"
	// TrimLockFile is held by the one process trimming the directory.
	TrimLockFile = "trim.lock"
	// TrimCursorFile records how far an unfinished trim pass got, so that
	// the next process resumes it (see cache's trimcursor.go).
	TrimCursorFile = "trim.cursor"
)

// Paths of the state files relative to the cache directory, for
// operations confined to it (os.Root).
const (
	LedgerRel   = StateDir + "/" + LedgerFile
	StatsRel    = StateDir + "/" + StatsFile
	TrimLockRel = StateDir + "/" + TrimLockFile
	// TrimCursorRel is the trim cursor file.
	TrimCursorRel = StateDir + "/" + TrimCursorFile
)

// QuarantineRel returns the path of a quarantined file relative to the
// cache directory.
func QuarantineRel(name string) string { return QuarantineDir + "/" + name }

// Names of a backend tier's subdirectories: "<backend>/autotune",
// "<backend>/kernels" and "<backend>/aliases" (the executables' keys by
// exact program text, cache/alias.go).
const (
	AutotuneSub = "autotune"
	KernelsSub  = "kernels"
	AliasesSub  = "aliases"
)

// JAX's names (jax/_src/lru_cache.py): an entry is "<key>-cache", its
// last-use time "<key>-atime", and the directory lock ".lockfile".
const (
	JAXCacheSuffix = "-cache"
	JAXAtimeSuffix = "-atime"
	JAXLockFile    = ".lockfile"
)

// TempPrefix starts the name of every temporary file xlacache writes. Scans
// skip such files and remove them once stale (a writer killed mid-write
// leaves one behind).
const TempPrefix = ".tmp-"

// LeaseSuffix ends the name of a lease file in LocksDir.
const LeaseSuffix = ".lease"

// Dir is a cache directory: every path under it is built by its methods.
type Dir string

// Path returns the directory itself.
func (d Dir) Path() string { return string(d) }

// Join returns the path of rel, a slash-separated path relative to the
// directory. Callers must have validated rel (ValidRel) when it came from
// outside.
func (d Dir) Join(rel string) string { return filepath.Join(string(d), filepath.FromSlash(rel)) }

// Rel returns p relative to the directory, slash-separated, and whether p
// is inside it.
func (d Dir) Rel(p string) (string, bool) {
	r, err := filepath.Rel(string(d), p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// Tier returns the directory of a tier ("executables", "cpu/autotune").
func (d Dir) Tier(name string) string { return d.Join(name) }

// Entry returns where key's entry of the named tier lives.
func (d Dir) Entry(tier, key string) string { return d.Join(EntryRel(tier, key)) }

// State returns the state directory.
func (d Dir) State() string { return d.Join(StateDir) }

// Ledger returns the size ledger file.
func (d Dir) Ledger() string { return d.Join(LedgerRel) }

// Stats returns the persisted statistics file.
func (d Dir) Stats() string { return d.Join(StatsRel) }

// TrimLock returns the trim lock file.
func (d Dir) TrimLock() string { return d.Join(TrimLockRel) }

// TrimCursor returns the trim cursor file.
func (d Dir) TrimCursor() string { return d.Join(TrimCursorRel) }

// Quarantine returns the quarantine directory.
func (d Dir) Quarantine() string { return d.Join(QuarantineDir) }

// QuarantineName returns the file name a damaged file of tier gets in the
// quarantine; unique keeps two quarantines of the same name apart.
func QuarantineName(tier, base, unique string) string {
	return strings.ReplaceAll(tier, "/", "_") + "_" + base + "." + unique
}

// Locks returns the lease directory.
func (d Dir) Locks() string { return d.Join(LocksDir) }

// Lease returns the lease file for a single-flight name. Names are hashed,
// so any string is safe and cannot escape the locks directory.
func (d Dir) Lease(name string) string { return filepath.Join(d.Locks(), LeaseName(name)) }

// LeaseName is the base name of name's lease file.
func LeaseName(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16]) + LeaseSuffix
}

// XLAAutotune returns XLA's autotune cache directory.
func (d Dir) XLAAutotune() string { return d.Join(XLAAutotuneDir) }

// XLAAutotuneTmp returns the directory XLA writes autotune results through.
func (d Dir) XLAAutotuneTmp() string { return d.Join(XLAAutotuneDir + "/" + XLAAutotuneTmpDir) }

// XLAKernel returns XLA's kernel cache file.
func (d Dir) XLAKernel() string { return d.Join(XLAKernelFile) }

// keyDigestLen is the length of the hex digest that ends every key.
const keyDigestLen = 64

// Shard returns the shard directory name of key: the first two hex digits
// of the digest that ends it. Spreading entries over 256 directories keeps
// directory listings short however many entries exist. ok is false for a
// string that does not end in a 64-hex-digit digest.
func Shard(key string) (shard string, ok bool) {
	if len(key) < keyDigestLen+1 || key[len(key)-keyDigestLen-1] != '-' {
		return "", false
	}
	d := key[len(key)-keyDigestLen:]
	for i := 0; i < len(d); i++ {
		c := d[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return d[:2], true
}

// EntryRel returns the slash-separated path of key's entry in tier relative
// to the cache directory: "<tier>/<shard>/<key>". The key must be valid
// (cache.ParseKey); an invalid key yields a path in shard "xx" that no
// valid key uses.
func EntryRel(tier, key string) string {
	shard, ok := Shard(key)
	if !ok {
		shard = "xx"
	}
	return tier + "/" + shard + "/" + key
}

// ObjectName is the name of key's entry in the shared store: "<tier>/<key>"
// (the store has no need for shards).
func ObjectName(tier, key string) string { return tier + "/" + key }

// tierNameRE matches "executables" and "<backend>/<subcache>".
var tierNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*(/[a-z0-9][a-z0-9_]*)?$`)

// reserved lists top-level names a backend may not use as its name.
var reserved = map[string]bool{
	ExecutablesDir: true, QuarantineDir: true, LocksDir: true,
	XLAAutotuneDir: true, XLAKernelFile: true,
	// Other top-level prefixes of the shared store (bucket.go), which
	// bucket retention and sync must never take for a tier: the usage
	// markers (UsedPrefix), older versions' object leases
	// (OldLeasePrefix) and exec's packs (PackPrefix).
	"used": true, "leases": true, "hostfill": true,
}

// ValidTierName reports whether name is an acceptable tier name:
// "executables", or "<backend>/<sub>" with lower-case segments.
func ValidTierName(name string) error {
	if !tierNameRE.MatchString(name) {
		return fmt.Errorf("tier name %q: want \"executables\" or \"<backend>/<subcache>\" in lower-case letters, digits and '_'", name)
	}
	first, _, nested := strings.Cut(name, "/")
	if !nested && name != ExecutablesDir {
		return fmt.Errorf("tier name %q: a backend tier is \"<backend>/<subcache>\"", name)
	}
	if nested && reserved[first] {
		return fmt.Errorf("tier name %q: %q is reserved", name, first)
	}
	return nil
}

// IsTemp reports whether a base name is a temporary file of xlacache or of
// XLA (an autotune result in XLAAutotuneTmpDir is classified by Classify,
// which knows the directory).
func IsTemp(base string) bool {
	return strings.HasPrefix(base, TempPrefix) || strings.HasPrefix(base, XLAKernelFile+XLAKernelTempInfix)
}

// XLAOwned reports whether the file at rel (as Classify sees it) is
// written by XLA itself rather than through xlacache's atomic writes:
// XLA's autotune results and their temporaries in XLAAutotuneTmpDir, and
// its kernel cache file and temporaries. XLA may be writing such a file at
// any time, so deleting one needs the protections of internal/inuse, and
// its temporaries are garbage after that grace period rather than after an
// hour.
func XLAOwned(rel string, c Class) bool {
	switch c.Kind {
	case XLAAutotune, XLAKernel:
		return true
	case Temp:
		base := rel[strings.LastIndexByte(rel, '/')+1:]
		return (c.Area == XLAAutotuneDir || c.Area == XLAKernelFile) && !strings.HasPrefix(base, TempPrefix)
	}
	return false
}

// Kind is what a file under the cache directory is.
type Kind int

// Kinds of files, as Classify reports them.
const (
	// Foreign is anything the layout does not explain.
	Foreign Kind = iota
	// Entry is an xlacache entry at its place in a tier ("<tier>/<shard>/<key>").
	Entry
	// Temp is a temporary file (xlacache's, or XLA's autotune and kernel
	// cache temporaries).
	Temp
	// Quarantined is a file in the quarantine.
	Quarantined
	// State is a file in the state directory.
	State
	// Lease is a file in the locks directory.
	Lease
	// XLAAutotune is a file in XLA's autotune cache directory.
	XLAAutotune
	// XLAKernel is XLA's kernel cache file.
	XLAKernel
	// JAXEntry is an entry of a JAX cache sharing the directory:
	// "<key>-cache" directly in it, with a JAX key ("<module>-<64 hex>").
	// JAX manages it under its own lock; xlacache's scans never count or
	// evict it (its "-atime" file and lock file are Foreign).
	JAXEntry
)

var kindNames = [...]string{"foreign", "entry", "temp", "quarantine", "state", "lease", "xla-autotune", "xla-kernels", "jax-entry"}

// String names the kind for logs and reports.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Class is the classification of one path relative to the cache directory.
type Class struct {
	Kind Kind
	// Area is the area the file counts toward in usage reports: a tier
	// name ("executables", "cpu/autotune"), XLAAutotuneDir, XLAKernelFile,
	// QuarantineDir, or "" for state, leases and foreign files. A
	// temporary file gets the area of the directory it sits in.
	Area string
	// Tier and Key are set for entries.
	Tier, Key string
}

// Counted reports whether the file counts toward the size bound and may be
// evicted by a trim: entries, XLA's subcache files and the quarantine.
func (c Class) Counted() bool {
	switch c.Kind {
	case Entry, Quarantined, XLAAutotune, XLAKernel:
		return true
	}
	return false
}

// Classify says what the file at rel (slash-separated, relative to the
// cache directory) is, from its name alone. Entries are recognised only at
// "<tier>/<shard>/<key>" with a valid tier name, a valid key shape and the
// right shard.
func Classify(rel string) Class {
	base := rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		base = rel[i+1:]
	}
	first, rest, nested := strings.Cut(rel, "/")
	switch {
	case first == StateDir && nested:
		return Class{Kind: State}
	case first == LocksDir && nested:
		return Class{Kind: Lease}
	case first == QuarantineDir && nested:
		if IsTemp(base) {
			return Class{Kind: Temp, Area: QuarantineDir}
		}
		return Class{Kind: Quarantined, Area: QuarantineDir}
	case first == XLAAutotuneDir && nested:
		if strings.HasPrefix(rest, XLAAutotuneTmpDir+"/") || IsTemp(base) {
			return Class{Kind: Temp, Area: XLAAutotuneDir}
		}
		return Class{Kind: XLAAutotune, Area: XLAAutotuneDir}
	case rel == XLAKernelFile:
		return Class{Kind: XLAKernel, Area: XLAKernelFile}
	case !nested && strings.HasPrefix(base, XLAKernelFile+XLAKernelTempInfix):
		return Class{Kind: Temp, Area: XLAKernelFile}
	case !nested && IsTemp(base):
		return Class{Kind: Temp}
	case !nested && isJAXEntry(base):
		return Class{Kind: JAXEntry}
	}
	parts := strings.Split(rel, "/")
	var tier string
	switch len(parts) {
	case 3:
		tier = parts[0]
	case 4:
		tier = parts[0] + "/" + parts[1]
	default:
		return Class{}
	}
	if ValidTierName(tier) != nil {
		return Class{}
	}
	if IsTemp(base) {
		return Class{Kind: Temp, Area: tier}
	}
	key := parts[len(parts)-1]
	if shard, ok := Shard(key); !ok || shard != parts[len(parts)-2] {
		return Class{}
	}
	return Class{Kind: Entry, Area: tier, Tier: tier, Key: key}
}

// isJAXEntry reports whether the base name is a JAX entry's,
// "<key>-cache" with JAX's key text: a module name of any characters but
// a newline, a dash and 64 lower-case hex digits (the pattern of
// xla/jaxcache.SplitKey, which walk_test.go holds this to).
func isJAXEntry(base string) bool {
	key, ok := strings.CutSuffix(base, JAXCacheSuffix)
	if !ok || len(key) <= keyDigestLen+1 || strings.IndexByte(key, '\n') >= 0 {
		return false
	}
	_, ok = Shard(key)
	return ok
}

// OwnedTopDir reports whether the top-level directory name (at path p) may
// hold files of the cache, so that scans descend into it: the executables
// tier, XLA's autotune cache, the quarantine, and a backend's tier
// directory, recognised by holding only "autotune", "kernels" and
// "aliases" subdirectories. Anything else (a JAX cache's neighbours, a user's files)
// is left alone.
func OwnedTopDir(name, p string) bool {
	return ownedTopDir(name, func() ([]fs.DirEntry, error) { return os.ReadDir(p) })
}

// ownedTopDir is OwnedTopDir with the directory's listing read by readDir.
func ownedTopDir(name string, readDir func() ([]fs.DirEntry, error)) bool {
	switch name {
	case ExecutablesDir, QuarantineDir, XLAAutotuneDir:
		return true
	case StateDir, LocksDir:
		return false
	}
	if ValidTierName(name+"/"+AutotuneSub) != nil {
		return false
	}
	ents, err := readDir()
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if !e.IsDir() || (e.Name() != AutotuneSub && e.Name() != KernelsSub && e.Name() != AliasesSub) {
			return false
		}
	}
	return true
}

// ValidRel checks a slash-separated relative path that came from outside
// (an archive member, an object name): clean, relative, no empty, "." or
// ".." segment, no backslash, NUL or control character. Such a path maps
// to exactly one file and cannot leave the directory by its name.
func ValidRel(rel string) error {
	if rel == "" {
		return fmt.Errorf("empty path")
	}
	if len(rel) > 900 {
		return fmt.Errorf("path of %d bytes is too long", len(rel))
	}
	if strings.ContainsAny(rel, "\\\x00") {
		return fmt.Errorf("path %q contains a backslash or NUL", rel)
	}
	for seg := range strings.SplitSeq(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q has an empty, '.' or '..' segment", rel)
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("path %q contains a control character", rel)
			}
		}
	}
	return nil
}
