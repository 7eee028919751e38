package jaxcache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
)

// File name parts of JAX's layout (names owned by internal/layout).
const (
	CacheSuffix = layout.JAXCacheSuffix
	AtimeSuffix = layout.JAXAtimeSuffix
	LockName    = layout.JAXLockFile
	// AutotuneDirName and KernelFileName are XLA's subcaches inside the
	// directory, at the paths JAX gives them.
	AutotuneDirName = layout.XLAAutotuneDir
	KernelFileName  = layout.XLAKernelFile
)

// keyPattern is JAX's key text: a module name, a dash, 64 hex digits
// (jax/_src/cache_key.py). Module names are MLIR symbol names.
var keyPattern = regexp.MustCompile(`^(.+)-([0-9a-f]{64})$`)

// SplitKey returns the module name and hash of a JAX key, or ok false.
func SplitKey(key string) (module, hash string, ok bool) {
	m := keyPattern.FindStringSubmatch(key)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Entry is one JAX executable entry.
type Entry struct {
	// Key is the file name without "-cache".
	Key    string
	Module string
	// Path is the "-cache" file.
	Path string
	// Size is the "-cache" file's size; AtimeSize the "-atime" file's.
	Size, AtimeSize int64
	ModTime         time.Time
	// LastUse is the "-atime" time when present, else the file's mtime.
	LastUse time.Time
	// HasAtime says whether a valid "-atime" file exists.
	HasAtime bool
	// Atime and Ctime are the "-cache" file's access and change times
	// (zero outside Linux); Load is what they say (see LoadState).
	Atime, Ctime time.Time
	Load         LoadState
}

// SubcacheFile is one file of XLA's subcaches.
type SubcacheFile struct {
	// Subcache is AutotuneDirName or KernelFileName.
	Subcache string
	Path     string
	// Rel is the path relative to the cache directory.
	Rel     string
	Size    int64
	ModTime time.Time
	// LastUse is the later of mtime and the filesystem's access time.
	LastUse time.Time
	// Temp marks in-progress files: XLA's autotune results under tmp/,
	// its kernel cache temporaries ("xla_gpu_kernel_cache_file.tmp.*"),
	// and temporary files of atomic writes (layout.Classify's Temp).
	Temp bool
}

// Dir is a scanned JAX cache directory.
type Dir struct {
	Path      string
	Entries   []Entry
	Subcaches []SubcacheFile
	// OrphanAtimes are "-atime" files without their "-cache" file.
	OrphanAtimes []string
	// AtimeMode is how the directory's filesystem keeps access times,
	// which tell whether JAX loaded an entry (Entry.Load).
	AtimeMode AtimeMode
	// Ignored counts other top-level names (xlacache's own tiers, say),
	// which Scan, Verify and Prune leave alone; the lock file is not counted.
	Ignored int
}

// IsJAXDir reports whether dir looks like a JAX cache directory: it holds
// at least one "<module>-<hash>-cache" file. A directory with only XLA
// subcaches is not claimed, since xlacache's own tiers put them there too.
func IsJAXDir(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		name := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(name, CacheSuffix) {
			if _, _, ok := SplitKey(strings.TrimSuffix(name, CacheSuffix)); ok {
				return true, nil
			}
		}
	}
	return false, nil
}

// Scan lists a JAX cache directory: its entries and the files of XLA's
// subcaches in it. It reads no entry content. Symbolic links are never
// followed, so nothing outside the directory is counted or touched.
func Scan(ctx context.Context, dir string) (*Dir, error) {
	d := &Dir{Path: dir, AtimeMode: dirAtimeMode(dir)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("scan JAX cache %s: %w", dir, err)
	}
	atimes := map[string]fs.DirEntry{}
	var caches []fs.DirEntry
	for _, e := range ents {
		name := e.Name()
		switch {
		case e.Type().IsRegular() && strings.HasSuffix(name, CacheSuffix) && len(name) > len(CacheSuffix):
			caches = append(caches, e)
		case e.Type().IsRegular() && strings.HasSuffix(name, AtimeSuffix) && len(name) > len(AtimeSuffix):
			atimes[strings.TrimSuffix(name, AtimeSuffix)] = e
		case name == AutotuneDirName && e.IsDir():
			if err := d.scanAutotune(ctx); err != nil {
				return nil, err
			}
		case name == KernelFileName && e.Type().IsRegular():
			if f, err := subcacheFile(dir, KernelFileName, KernelFileName, false); err == nil {
				d.Subcaches = append(d.Subcaches, f)
			}
		case e.Type().IsRegular() && layout.Classify(name).Area == KernelFileName && layout.Classify(name).Kind == layout.Temp:
			// A temporary file newer XLA writes the kernel cache through
			// ("xla_gpu_kernel_cache_file.tmp.*"), or one a crashed writer
			// left behind: counted, and garbage once out of the grace
			// period and not open for writing.
			if f, err := subcacheFile(dir, KernelFileName, name, true); err == nil {
				d.Subcaches = append(d.Subcaches, f)
			}
		case name == LockName:
		default:
			d.Ignored++
		}
	}
	for _, e := range caches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		key := strings.TrimSuffix(e.Name(), CacheSuffix)
		info, err := e.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		en := Entry{Key: key, Path: filepath.Join(dir, e.Name()), Size: info.Size(), ModTime: info.ModTime(), LastUse: info.ModTime()}
		en.Module, _, _ = SplitKey(key)
		entryTimes(&en, info, d.AtimeMode)
		if a, ok := atimes[key]; ok {
			delete(atimes, key)
			if ai, err := a.Info(); err == nil {
				en.AtimeSize = ai.Size()
			}
			if t, ok := readAtime(filepath.Join(dir, a.Name())); ok {
				en.LastUse, en.HasAtime = t, true
			}
		}
		d.Entries = append(d.Entries, en)
	}
	for key := range atimes {
		d.OrphanAtimes = append(d.OrphanAtimes, filepath.Join(dir, key+AtimeSuffix))
	}
	sort.Strings(d.OrphanAtimes)
	sort.Slice(d.Entries, func(i, j int) bool { return d.Entries[i].Key < d.Entries[j].Key })
	sort.Slice(d.Subcaches, func(i, j int) bool { return d.Subcaches[i].Rel < d.Subcaches[j].Rel })
	return d, nil
}

func (d *Dir) scanAutotune(ctx context.Context) error {
	return layout.WalkUnder(ctx, os.DirFS(d.Path), layout.XLAAutotuneDir, func(f layout.File, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("scan XLA autotune cache: %w", err)
		}
		if !f.Entry.Type().IsRegular() {
			return nil // links and devices are never followed or counted
		}
		temp := f.Class.Kind == layout.Temp
		if sf, err := subcacheFile(d.Path, AutotuneDirName, filepath.FromSlash(f.Rel), temp); err == nil {
			d.Subcaches = append(d.Subcaches, sf)
		}
		return nil
	})
}

func subcacheFile(dir, sub, rel string, temp bool) (SubcacheFile, error) {
	p := filepath.Join(dir, rel)
	info, err := os.Lstat(p)
	if err != nil {
		return SubcacheFile{}, err
	}
	f := SubcacheFile{Subcache: sub, Path: p, Rel: rel, Size: info.Size(), ModTime: info.ModTime(), LastUse: info.ModTime(), Temp: temp}
	if at, ok := fileAtime(info); ok && at.After(f.LastUse) {
		f.LastUse = at
	}
	return f, nil
}

// readAtime reads a "-atime" file: 8 little-endian bytes, nanoseconds.
func readAtime(p string) (time.Time, bool) {
	// A FIFO planted there must not hang a scan.
	b, err := atomicfile.ReadRegularPath(p, 8)
	if err != nil || len(b) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.LittleEndian.Uint64(b))), true
}

// SubcacheStats sums one XLA subcache.
type SubcacheStats struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// TempFiles are XLA's in-progress autotune files.
	TempFiles int `json:"temp_files"`
}

// Stats sums a directory.
type Stats struct {
	Entries      int                      `json:"entries"`
	EntryBytes   int64                    `json:"entry_bytes"`
	MissingAtime int                      `json:"missing_atime"`
	OrphanAtimes int                      `json:"orphan_atimes"`
	Subcaches    map[string]SubcacheStats `json:"subcaches"`
	// NeverLoaded counts the entries JAX has not read since they were
	// written, and LoadUnknown those whose loads cannot be told; AtimeMode
	// says why (noatime: every entry is unknown, none is "never loaded").
	NeverLoaded int       `json:"never_loaded"`
	LoadUnknown int       `json:"load_unknown"`
	AtimeMode   AtimeMode `json:"atime_mode"`
	// TotalBytes covers entries, their atime files and every subcache file.
	TotalBytes int64 `json:"total_bytes"`
}

// OwnBytes are the bytes of JAX's own files: entries, their atime files and
// orphaned atime files, without XLA's subcaches.
func (s Stats) OwnBytes() int64 {
	n := s.TotalBytes
	for _, ss := range s.Subcaches {
		n -= ss.Bytes
	}
	return n
}

// Stats sums the scanned directory, XLA's subcaches included.
func (d *Dir) Stats() Stats {
	s := Stats{Subcaches: map[string]SubcacheStats{}, AtimeMode: d.AtimeMode}
	for _, e := range d.Entries {
		s.Entries++
		switch e.Load {
		case NotLoaded:
			s.NeverLoaded++
		case LoadUnknown, "":
			s.LoadUnknown++
		}
		s.EntryBytes += e.Size
		s.TotalBytes += e.Size + e.AtimeSize
		if !e.HasAtime {
			s.MissingAtime++
		}
	}
	s.OrphanAtimes = len(d.OrphanAtimes)
	s.TotalBytes += int64(8 * len(d.OrphanAtimes))
	for _, f := range d.Subcaches {
		ss := s.Subcaches[f.Subcache]
		ss.Files++
		ss.Bytes += f.Size
		if f.Temp {
			ss.TempFiles++
		}
		s.Subcaches[f.Subcache] = ss
		s.TotalBytes += f.Size
	}
	return s
}
