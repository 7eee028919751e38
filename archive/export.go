package archive

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// ExportStats counts what Export wrote into the archive.
type ExportStats struct {
	// Files and Bytes count the files archived (the manifest aside).
	Files int
	Bytes int64
	// Skipped counts entries left out because they failed verification.
	Skipped int
}

// exportFile is one file to archive.
type exportFile struct {
	rel   string // slash path relative to the directory
	path  string
	class layout.Class
}

// Export writes every tier of the cache directory dir to w as an archive:
// entries of every tier that verify (with o.SigningKey when set; damaged
// ones are left out and counted), XLA's autotune files and kernel cache
// file. State, temporary, quarantined and lease files never travel. The
// caller owns w; Export does not close it.
func Export(ctx context.Context, dir string, w io.Writer, o Options) (ExportStats, error) {
	var st ExportStats
	dir, err := filepath.Abs(dir)
	if err != nil {
		return st, err
	}
	// A symlinked cache directory is a normal setup: walk what it points
	// to (the walk itself never follows a link inside the tree).
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return st, err
	}
	files, err := collect(ctx, dir)
	if err != nil {
		return st, err
	}
	m := manifest{Version: 1, Created: time.Now().UTC(), Raw: map[string]string{}}
	var keep []exportFile
	for _, f := range files {
		if f.class.Kind != layout.Entry {
			data, err := readRaw(f)
			if err != nil {
				return st, err
			}
			if f.class.Area == jaxArea {
				// JAX writes in place: an entry being written, or a
				// damaged one, does not decode whole and is not shipped.
				if err := jaxcache.CheckComplete(data); err != nil {
					st.Skipped++
					continue
				}
			}
			m.Raw[f.rel] = sha256Hex(data)
		} else if data, err := cache.ReadEntryFile(f.path); err != nil {
			st.Skipped++ // damaged entries are not shipped
			continue
		} else if _, err := entry.DecodeAs(data, f.class.Key, o.SigningKey); err != nil {
			st.Skipped++
			continue
		}
		keep = append(keep, f)
	}
	if o.SigningKey.CanSign() {
		mac, err := m.sign(o.SigningKey)
		if err != nil {
			return st, fmt.Errorf("signing the manifest: %w", err)
		}
		m.MAC = mac
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return st, err
	}
	tw := tar.NewWriter(zw)
	mb, _ := json.MarshalIndent(m, "", " ")
	if err := writeMember(tw, ManifestName, mb, m.Created); err != nil {
		return st, err
	}
	for _, f := range keep {
		data, err := readRaw(f)
		if err != nil {
			return st, err
		}
		// The raw file may have changed since it was hashed (XLA appends
		// to its kernel cache): archive only what the manifest says.
		if f.class.Kind != layout.Entry && sha256Hex(data) != m.Raw[f.rel] {
			return st, fmt.Errorf("%s changed while exporting; try again", f.path)
		}
		info, err := os.Stat(f.path)
		if err != nil {
			return st, err
		}
		if err := writeMember(tw, f.rel, data, info.ModTime()); err != nil {
			return st, err
		}
		st.Files++
		st.Bytes += int64(len(data))
	}
	if err := tw.Close(); err != nil {
		return st, err
	}
	return st, zw.Close()
}

// collect lists the files of dir an archive carries, sorted by path.
func collect(ctx context.Context, dir string) ([]exportFile, error) {
	var files []exportFile
	err := layout.Walk(ctx, os.DirFS(dir), func(lf layout.File, err error) error {
		p := filepath.Join(dir, filepath.FromSlash(lf.Rel))
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if !lf.Entry.Type().IsRegular() {
			return nil
		}
		c, err := classify(lf.Rel)
		if err != nil {
			return nil // not part of any tier
		}
		files = append(files, exportFile{rel: lf.Rel, path: p, class: c})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, err
}

// ExportFile is Export into the file at path, which replaces any file
// there only once the archive is complete: a failed export leaves no
// partial archive behind.
func ExportFile(ctx context.Context, dir, path string, o Options) (ExportStats, error) {
	var st ExportStats
	err := atomicfile.ReplaceFrom(path, func(w io.Writer) (err error) {
		st, err = Export(ctx, dir, w, o)
		return err
	}, atomicfile.Options{})
	return st, err
}

// readRaw reads a file of the export that is not an xlacache entry. A JAX
// entry is read without moving its access time (jaxcache.ReadEntryPath):
// exporting one is not a load, and exec and stats tell loads by it.
func readRaw(f exportFile) ([]byte, error) {
	if f.class.Area == jaxArea {
		return jaxcache.ReadEntryPath(f.path, maxMember)
	}
	return atomicfile.ReadRegularPath(f.path, maxMember)
}
