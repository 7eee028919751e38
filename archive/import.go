package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/subcache"
)

// ImportStats counts what Import did.
type ImportStats struct {
	// Files counts files written (a merged kernel cache file counts when
	// the merge changed it); Skipped those already present.
	Files, Skipped int
	// Refused lists the members that failed a check, each as its quoted
	// name and the reason. They were not written.
	Refused []string
}

// maxMember bounds one member's size: no entry or raw file may exceed it.
const maxMember = entry.MaxHeaderSize + 4<<30

// maxManifest bounds the manifest's size.
const maxManifest = 64 << 20

// Import unpacks the archive read from r into the cache directory dir,
// creating dir if needed. A member that fails a check is refused (listed in
// the result) and the others are still imported; the error reports only
// failures to read the archive or to write the directory. Existing entries
// and autotune files are kept; the kernel cache file is merged with the
// local one.
func Import(ctx context.Context, r io.Reader, dir string, o Options) (ImportStats, error) {
	var st ImportStats
	zr, err := zstd.NewReader(r, zstd.WithDecoderMaxMemory(1<<30), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return st, fmt.Errorf("not a zstd archive: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	dirMode, fileMode := o.modes()
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return st, err
	}
	var man *manifest
	refuse := func(name string, why error) {
		st.Refused = append(st.Refused, fmt.Sprintf("%q: %v", name, why))
	}
	for first := true; ; first = false {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("reading archive: %w", err)
		}
		name := hdr.Name
		if first && name == ManifestName {
			m, err := readManifest(tr, hdr, o.SigningKey)
			if err != nil {
				return st, err
			}
			man = &m
			continue
		}
		if hdr.Typeflag == tar.TypeDir {
			continue // directories are recreated from file paths
		}
		if hdr.Typeflag != tar.TypeReg {
			refuse(name, fmt.Errorf("not a regular file (tar type %q)", hdr.Typeflag))
			continue
		}
		class, err := classify(name)
		if err != nil {
			refuse(name, err)
			continue
		}
		if hdr.Size < 0 || hdr.Size > maxMember {
			refuse(name, fmt.Errorf("size %d out of range", hdr.Size))
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil {
			return st, fmt.Errorf("reading %s: %w", name, err)
		}
		if class.Kind == layout.Entry {
			_, err = entry.DecodeAs(data, class.Key, o.SigningKey)
		} else {
			err = checkRaw(man, name, data)
		}
		if err != nil {
			refuse(name, err)
			continue
		}
		dst := layout.Dir(dir).Join(name)
		created, err := install(dir, dst, data, class.Kind == layout.XLAKernel, dirMode, fileMode)
		if err != nil {
			return st, fmt.Errorf("writing %s: %w", dst, err)
		}
		if created {
			st.Files++
		} else {
			st.Skipped++
		}
	}
	return st, nil
}

func readManifest(tr *tar.Reader, hdr *tar.Header, key []byte) (manifest, error) {
	var m manifest
	if hdr.Size > maxManifest {
		return m, fmt.Errorf("manifest of %d bytes is implausible", hdr.Size)
	}
	b, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("manifest version %d unknown", m.Version)
	}
	if len(key) > 0 && (m.MAC == "" || !hmac.Equal([]byte(m.MAC), []byte(m.mac(key)))) {
		// Raw files then cannot be trusted; entries still verify alone.
		m.Raw = nil
		m.MAC = macInvalid
	}
	return m, nil
}

// install writes data at dst (inside dir) atomically, never through a
// symlink planted in the tree: entries and autotune files are published
// only when absent (first writer wins); the kernel cache file is merged
// with the local one and replaced when the merge changes it.
func install(dir, dst string, data []byte, merge bool, dirMode, fileMode fs.FileMode) (bool, error) {
	if err := atomicfile.MkdirInside(dir, filepath.Dir(dst), dirMode); err != nil {
		return false, err
	}
	o := atomicfile.Options{Perm: fileMode}
	if !merge {
		return atomicfile.Publish(dst, data, o)
	}
	local, err := os.ReadFile(dst)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	merged, _, merr := subcache.MergeKernelCaches(local, [][]byte{data})
	if merr != nil && len(local) > 0 {
		return false, merr
	}
	if merr != nil {
		merged = data
	}
	if bytes.Equal(merged, local) {
		return false, nil
	}
	return true, atomicfile.Replace(dst, merged, o)
}
