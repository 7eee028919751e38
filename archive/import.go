package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/rawfiles"
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

// maxManifest bounds the manifest's size.
const maxManifest = 64 << 20

// Import extracts the archive read from r into the cache directory dir,
// creating dir if needed. A member that fails a check is refused (listed in
// the result) and the others are still imported; the error reports only
// failures to read the archive or to write the directory. Existing entries
// and autotune files are kept; the kernel cache file is merged with the
// local one.
//
// Members are streamed and checked as they pass (stream.go): each is
// bounded by Options.MaxMemberSize, their sum by Options.MaxImportSize
// (declared sizes; tar delivers exactly what it declares), an archive that
// expands like a compression bomb stops the import with an error naming
// the member, and an entry or raw file is written to a temporary file in
// the directory and installed only once it verified.
func Import(ctx context.Context, r io.Reader, dir string, o Options) (ImportStats, error) {
	var st ImportStats
	x := expansion{compressed: &countReader{r: r}}
	zr, err := zstd.NewReader(x.compressed, zstd.WithDecoderMaxMemory(1<<30), zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return st, fmt.Errorf("not a zstd archive: %w", err)
	}
	defer zr.Close()
	x.expanded = &countReader{r: zr}
	tr := tar.NewReader(x.expanded)
	dirMode, fileMode := o.modes()
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return st, err
	}
	// Every write goes through a root on the (resolved) directory, so a
	// symbolic link planted in it cannot redirect one outside.
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return st, err
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return st, err
	}
	defer root.Close()
	var man *manifest
	refuse := func(name string, why error) {
		st.Refused = append(st.Refused, fmt.Sprintf("%q: %v", name, why))
	}
	// member reads the current member's data, watching the expansion.
	member := func(name string) io.Reader { return &memberReader{ctx: ctx, r: tr, x: x, name: name} }
	// skip reads what is left of a member that is not imported: through
	// the same checks, as a bomb is as likely there.
	skip := func(name string) error {
		if _, err := io.Copy(io.Discard, member(name)); err != nil {
			return fmt.Errorf("reading archive: %w", err)
		}
		return nil
	}
	maxMemberSize, maxImportSize := o.maxMemberSize(), o.maxImportSize()
	var declared int64
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
			m, err := readManifest(member(name), hdr, o.SigningKey)
			if err != nil {
				return st, err
			}
			man = &m
			continue
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := skip(name); err != nil {
				return st, err
			}
			continue // directories are recreated from file paths
		}
		if hdr.Typeflag != tar.TypeReg {
			refuse(name, fmt.Errorf("not a regular file (tar type %q)", hdr.Typeflag))
			if err := skip(name); err != nil {
				return st, err
			}
			continue
		}
		if hdr.Size >= 0 {
			declared += hdr.Size
		}
		if declared > maxImportSize {
			return st, fmt.Errorf("member %q: the archive's members add up to more than %d bytes: import stopped", name, maxImportSize)
		}
		class, err := classify(name)
		if err == nil && (hdr.Size < 0 || hdr.Size > maxMemberSize) {
			err = fmt.Errorf("size %d out of range (at most %d)", hdr.Size, maxMemberSize)
		}
		if err == nil && class.Kind == layout.XLAKernel && hdr.Size > maxKernelFile {
			err = fmt.Errorf("kernel cache file of %d bytes is larger than %d", hdr.Size, maxKernelFile)
		}
		if err != nil {
			refuse(name, err)
			if err := skip(name); err != nil {
				return st, err
			}
			continue
		}
		created, err := importMember(root, name, class, man, member(name), hdr.Size, o.SigningKey, dirMode, fileMode)
		var ref errRefused
		var rerr readError
		switch {
		case errors.As(err, &ref):
			refuse(name, ref.err)
		case errors.As(err, &rerr):
			return st, fmt.Errorf("reading archive: %w", rerr.err)
		case err != nil:
			return st, fmt.Errorf("writing %s: %w", layout.Dir(resolved).Join(name), err)
		case created:
			st.Files++
		default:
			st.Skipped++
		}
		// Whatever the checks left unread (a refusal mid-member).
		if err := skip(name); err != nil {
			return st, err
		}
	}
	return st, nil
}

// importMember checks the member rel (of the given class and declared
// size, whose data r reads) and installs it in root. Entries and
// autotune files stream through their check into a temporary file
// published only when the check passes; the kernel cache file, bounded by
// maxKernelFile, is read to be merged. A member whose file exists already
// is checked all the same, then skipped. The error wraps errRefused for a
// member that failed a check, readError for a failure to read the
// archive.
func importMember(root *os.Root, rel string, class layout.Class, man *manifest, r io.Reader, size int64, key *sign.Keys, dirMode, fileMode fs.FileMode) (created bool, err error) {
	var c checker
	if class.Kind == layout.Entry {
		c, err = newEntryCheck(class.Key, key, size)
	} else {
		c, err = newRawCheck(man, rel)
	}
	if err != nil {
		return false, err
	}
	defer c.abort()
	if jax := class.Area == jaxArea; jax || class.Kind == layout.XLAKernel {
		data, err := io.ReadAll(io.LimitReader(r, size))
		if err != nil {
			return false, err
		}
		c.Write(data)
		if err := c.finish(); err != nil {
			return false, err
		}
		// JAX loads what it finds as native code, with no check of its
		// own: besides the manifest, the entry must decode whole (checked
		// streaming, as exec's publisher does). XLA's kernel cache file
		// is merged into the local one.
		if jax {
			if err := jaxcache.CheckComplete(data); err != nil {
				return false, refused("not a whole JAX entry: %v", err)
			}
		}
		return install(root, rel, data, !jax, dirMode, fileMode)
	}
	if _, err := root.Lstat(rel); err == nil {
		// First writer wins: nothing to write, but the member is still
		// checked, so that a bad one is reported as refused.
		if _, err := io.Copy(c, io.LimitReader(r, size)); err != nil {
			return false, err
		}
		return false, c.finish()
	}
	return atomicfile.PublishFrom(rel, func(w io.Writer) error {
		if _, err := io.Copy(io.MultiWriter(c, w), io.LimitReader(r, size)); err != nil {
			return err
		}
		return c.finish()
	}, atomicfile.Options{Perm: fileMode, DirPerm: dirMode, Root: root})
}

func readManifest(r io.Reader, hdr *tar.Header, key *sign.Keys) (manifest, error) {
	var m manifest
	if hdr.Size > maxManifest {
		return m, fmt.Errorf("manifest of %d bytes is implausible", hdr.Size)
	}
	b, err := io.ReadAll(io.LimitReader(r, hdr.Size))
	if err != nil {
		return m, fmt.Errorf("reading the manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("manifest version %d unknown", m.Version)
	}
	if key.Enabled() && m.verify(key) != nil {
		// Raw files then cannot be trusted; entries still verify alone.
		m.Raw = nil
		m.MAC = macInvalid
	}
	return m, nil
}

// install writes data at rel (a validated member name, relative to root)
// atomically, never through a symlink planted in the tree: entries and
// autotune files are published only when absent (first writer wins); the
// kernel cache file is merged with the local one and replaced when the
// merge changes it.
func install(root *os.Root, rel string, data []byte, merge bool, dirMode, fileMode fs.FileMode) (bool, error) {
	o := atomicfile.Options{Perm: fileMode, DirPerm: dirMode, Root: root}
	if !merge {
		return atomicfile.Publish(rel, data, o)
	}
	dst := rel
	local, err := atomicfile.ReadRegular(root, dst, maxMember)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	merged, _, merr := rawfiles.MergeKernelCaches(local, [][]byte{data})
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
