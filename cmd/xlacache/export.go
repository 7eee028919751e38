package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/entry"
	"github.com/xlacache/xlacache/s3store"
)

var exportCmd = &cobra.Command{
	Use:   "export FILE",
	Short: "Pack the cache (all tiers) into one tar+zstd archive",
	Long: `Pack every tier of the cache directory into FILE ("-" for standard output):
executables, each backend's autotune and kernel tiers, XLA's autotune files
and kernel cache file. Entries that fail verification are left out (and
counted). The archive starts with a manifest listing the SHA-256 of XLA's
raw files; with XLACACHE_SIGNING_KEY the manifest is signed, so that
import can check raw files as it checks entries. Ship a warm cache in a
container image with export, then import at build time.`,
	Args: usageArgs(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, args []string) error {
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		if err := existingDir(opts.Dir); err != nil {
			return err
		}
		var w io.Writer = cmd.OutOrStdout()
		var commit func() error
		if args[0] != "-" {
			f, err := os.CreateTemp(filepath.Dir(args[0]), ".tmp-export-*")
			if err != nil {
				return fmt.Errorf("export %s: %w", args[0], err)
			}
			defer os.Remove(f.Name())
			defer f.Close()
			w = f
			commit = func() error {
				if err := f.Sync(); err != nil {
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				return os.Rename(f.Name(), args[0])
			}
		}
		st, err := exportArchive(cmd.Context(), opts, w)
		if err != nil {
			return fmt.Errorf("export %s: %w", args[0], err)
		}
		if commit != nil {
			if err := commit(); err != nil {
				return fmt.Errorf("export %s: %w", args[0], err)
			}
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "exported %d files (%d bytes) from %s; %d damaged entries left out\n", st.Files, st.Bytes, opts.Dir, st.Skipped)
		return nil
	},
}

var importCmd = &cobra.Command{
	Use:   "import FILE",
	Short: "Unpack an archive made by export into the cache directory",
	Long: `Unpack FILE ("-" for standard input) into the cache directory. Every member is
checked before anything is written: names must be plain relative paths
inside a known tier (no "..", no absolute paths), only regular files are
accepted (no symlinks, hard links or devices), entries are verified
(checksum, key, and the signature when XLACACHE_SIGNING_KEY is set) and XLA's
raw files must match the archive's manifest (signed, when a key is set).
Existing entries are kept; XLA's kernel cache file is merged.

Exit code 1 if any member was refused (the others are still imported).`,
	Args: usageArgs(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, args []string) error {
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		var r io.Reader = cmd.InOrStdin()
		if args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			defer f.Close()
			r = f
		}
		st, err := importArchive(cmd.Context(), opts, r)
		fmt.Fprintf(cmd.ErrOrStderr(), "imported %d files into %s; %d already present; %d refused\n", st.Files, opts.Dir, st.Skipped, len(st.Refused))
		for _, ref := range st.Refused {
			fmt.Fprintf(cmd.ErrOrStderr(), "  refused %s\n", ref)
		}
		if err != nil {
			return fmt.Errorf("import %s: %w", args[0], err)
		}
		if len(st.Refused) > 0 {
			return fmt.Errorf("import %s: %d member(s) refused", args[0], len(st.Refused))
		}
		return nil
	},
}

func init() {
	rootCmd.AddCommand(exportCmd, importCmd)
}

// manifestName is the archive's first member.
const manifestName = ".xlacache-manifest.json"

// manifest lists XLA's raw files (which, unlike entries, carry no checksum
// of their own) with their SHA-256, and is signed when a key is set.
type manifest struct {
	Version int               `json:"version"`
	Created time.Time         `json:"created"`
	Raw     map[string]string `json:"raw"`
	// MAC is HMAC-SHA256 over the manifest with MAC empty, hex.
	MAC string `json:"mac,omitempty"`
}

func (m manifest) mac(key []byte) string {
	c := m
	c.MAC = ""
	b, _ := json.Marshal(c)
	h := hmac.New(sha256.New, key)
	h.Write([]byte("xlacache-manifest-v1\x00"))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Member kinds of an archive.
const (
	kindEntry = iota + 1
	kindAutotune
	kindKernelFile
)

// classifyMember decides what an archive member (slash path relative to
// the cache directory) is, and refuses anything outside the tiers.
func classifyMember(name string) (kind int, tier, key string, err error) {
	if err := s3store.ValidName(name); err != nil {
		return 0, "", "", err
	}
	switch {
	case name == s3store.KernelFile:
		return kindKernelFile, "", "", nil
	case strings.HasPrefix(name, s3store.AutotuneDir+"/"):
		base := strings.TrimPrefix(name, s3store.AutotuneDir+"/")
		if !s3store.ValidAutotuneName(base) {
			return 0, "", "", fmt.Errorf("%q is not an XLA autotune file name", name)
		}
		return kindAutotune, "", "", nil
	}
	// <tier>/<shard>/<key>
	parts := strings.Split(name, "/")
	if len(parts) < 3 {
		return 0, "", "", fmt.Errorf("%q is not inside a cache tier", name)
	}
	tier = strings.Join(parts[:len(parts)-2], "/")
	key = parts[len(parts)-1]
	if err := cache.ValidTierName(tier); err != nil {
		return 0, "", "", err
	}
	if _, _, err := cache.ParseKey(key); err != nil {
		return 0, "", "", err
	}
	if want, _ := entryPath("", key); filepath.ToSlash(filepath.Dir(want)) != parts[len(parts)-2] {
		return 0, "", "", fmt.Errorf("%q: key %s belongs in shard %s", name, key, filepath.Dir(want))
	}
	return kindEntry, tier, key, nil
}

// entryPath is where the core stores key under tierDir: a shard directory
// named by the first two hex digits of the digest.
func entryPath(tierDir, key string) (string, bool) {
	if len(key) < 65 {
		return "", false
	}
	shard := key[len(key)-64 : len(key)-62]
	return filepath.Join(tierDir, shard, key), true
}

type exportStats struct {
	Files, Skipped int
	Bytes          int64
}

// exportFile is one file to pack.
type exportFile struct {
	rel  string // slash path relative to the directory
	path string
	kind int
	key  string
}

func collectExport(ctx context.Context, dir string) ([]exportFile, error) {
	var files []exportFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p == dir {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if strings.HasPrefix(d.Name(), ".") {
			// State, temporary and hidden files are not part of a cache.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel == cache.QuarantineDir || rel == "locks" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		kind, _, key, err := classifyMember(rel)
		if err != nil {
			return nil // not part of any tier
		}
		files = append(files, exportFile{rel: rel, path: p, kind: kind, key: key})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, err
}

func exportArchive(ctx context.Context, opts config.Options, w io.Writer) (exportStats, error) {
	var st exportStats
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return st, err
	}
	files, err := collectExport(ctx, dir)
	if err != nil {
		return st, err
	}
	m := manifest{Version: 1, Created: time.Now().UTC(), Raw: map[string]string{}}
	var keep []exportFile
	for _, f := range files {
		read := os.ReadFile
		if f.kind == kindEntry {
			read = cache.ReadEntryFile
		}
		data, err := read(f.path)
		if err != nil {
			if f.kind == kindEntry {
				st.Skipped++ // damaged entries are not shipped
				continue
			}
			return st, err
		}
		if f.kind == kindEntry {
			if err := verifyEntry(data, f.key, opts.SigningKey); err != nil {
				st.Skipped++
				continue
			}
		} else {
			sum := sha256.Sum256(data)
			m.Raw[f.rel] = hex.EncodeToString(sum[:])
		}
		keep = append(keep, f)
	}
	if len(opts.SigningKey) > 0 {
		m.MAC = m.mac(opts.SigningKey)
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return st, err
	}
	tw := tar.NewWriter(zw)
	mb, _ := json.MarshalIndent(m, "", " ")
	if err := writeMember(tw, manifestName, mb, m.Created); err != nil {
		return st, err
	}
	for _, f := range keep {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return st, err
		}
		if f.kind != kindEntry {
			// The raw file may have changed since it was hashed (XLA
			// appends to its kernel cache): pack what the manifest says.
			sum := sha256.Sum256(data)
			if hex.EncodeToString(sum[:]) != m.Raw[f.rel] {
				return st, fmt.Errorf("%s changed while exporting; try again", f.path)
			}
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

func writeMember(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	hdr := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

type importStats struct {
	Files, Skipped int
	Refused        []string
}

// maxMember bounds one member's size: no entry or raw file may exceed it.
const maxMember = entry.MaxHeaderSize + 4<<30

func importArchive(ctx context.Context, opts config.Options, r io.Reader) (importStats, error) {
	var st importStats
	zr, err := zstd.NewReader(r, zstd.WithDecoderMaxMemory(1<<30), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return st, fmt.Errorf("not a zstd archive: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	dirMode, fileMode := opts.EffectiveDirMode(), opts.EffectiveFileMode()
	if err := os.MkdirAll(opts.Dir, dirMode); err != nil {
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
		if first && name == manifestName {
			m, err := readManifest(tr, hdr, opts.SigningKey)
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
		kind, _, key, err := classifyMember(name)
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
		dst := filepath.Join(opts.Dir, filepath.FromSlash(name))
		switch kind {
		case kindEntry:
			if err := verifyEntry(data, key, opts.SigningKey); err != nil {
				refuse(name, err)
				continue
			}
		default:
			if err := checkRaw(man, name, data, opts.SigningKey); err != nil {
				refuse(name, err)
				continue
			}
		}
		created, err := installFile(opts.Dir, dst, data, kind, dirMode, fileMode)
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
	if hdr.Size > 64<<20 {
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
		m.MAC = "invalid"
	}
	return m, nil
}

// checkRaw verifies an XLA raw file against the manifest.
func checkRaw(m *manifest, name string, data []byte, key []byte) error {
	if m == nil {
		return errors.New("archive has no manifest to check XLA's raw files against")
	}
	if m.MAC == "invalid" {
		return errors.New("the archive's manifest is unsigned or does not verify with this signing key")
	}
	want, ok := m.Raw[name]
	if !ok {
		return errors.New("not listed in the archive's manifest")
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != want {
		return errors.New("content does not match the archive's manifest")
	}
	return nil
}

// installFile writes data at dst (inside dir) atomically: entries and
// autotune files are never overwritten, the kernel cache file is merged.
func installFile(dir, dst string, data []byte, kind int, dirMode, fileMode os.FileMode) (bool, error) {
	rel, err := filepath.Rel(dir, dst)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return false, fmt.Errorf("%s escapes %s", dst, dir)
	}
	if err := mkdirInside(dir, filepath.Dir(dst), dirMode); err != nil {
		return false, err
	}
	if kind == kindKernelFile {
		local, err := os.ReadFile(dst)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		merged, _, merr := s3store.MergeKernelCaches(local, [][]byte{data})
		if merr != nil && len(local) > 0 {
			return false, merr
		}
		if merr != nil {
			merged = data
		}
		if bytes.Equal(merged, local) {
			return false, nil
		}
		return true, writeTemp(dst, merged, fileMode, true)
	}
	if _, err := os.Lstat(dst); err == nil {
		return false, nil
	}
	return true, writeTemp(dst, data, fileMode, false)
}

// mkdirInside creates p and its parents under dir, refusing to follow a
// symlink planted in the directory tree.
func mkdirInside(dir, p string, mode os.FileMode) error {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	cur := dir
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		if seg == "." || seg == "" {
			continue
		}
		cur = filepath.Join(cur, seg)
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, mode); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case err != nil:
			return err
		case !st.IsDir():
			return fmt.Errorf("%s exists and is not a directory", cur)
		}
	}
	return nil
}

func writeTemp(dst string, data []byte, mode os.FileMode, replace bool) error {
	f, err := os.CreateTemp(filepath.Dir(dst), ".tmp-import-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(mode)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	if replace {
		if err := os.Rename(tmp, dst); err != nil {
			os.Remove(tmp)
			return err
		}
		return nil
	}
	err = os.Link(tmp, dst)
	os.Remove(tmp)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}
