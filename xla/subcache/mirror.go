// Package subcache is the one home of XLA's own subcaches as they sit in a
// cache directory (names in internal/layout): the autotune cache, one
// text-proto file per fused kernel, and the kernel cache, one binary
// protobuf file. It validates their names and content, merges kernel cache
// versions, and mirrors both to and from a shared blob.Store (Mirror),
// since XLA reads them only from a POSIX path.
package subcache

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
)

// Names of XLA's raw subcaches, as files under the cache directory and as
// objects in the store.
const (
	// AutotuneDir is XLA's per-fusion autotune cache directory: one
	// immutable text-proto file per fused kernel.
	AutotuneDir = layout.XLAAutotuneDir
	// KernelFile is XLA's compiled-kernel cache: one binary file that XLA
	// extends over time.
	KernelFile = layout.XLAKernelFile
	// KernelParts is the object prefix holding published versions of the
	// kernel cache file, each named by its content hash; pulls merge them.
	KernelParts = KernelFile + ".parts"
)

// ErrBadObject: a raw subcache object failed its integrity or signature
// check and was refused.
var ErrBadObject = errors.New("subcache: raw subcache object failed verification")

// rawMagic starts every raw subcache object; the version byte after it
// allows the envelope to change.
var rawMagic = []byte("XLCRAW")

const (
	rawVersion    = 1
	rawFlagSigned = 1
	rawHeaderLen  = 6 + 1 + 1 + 32 // magic, version, flags, sha256
)

// Seal wraps a raw subcache file for the store: a SHA-256 of the payload
// and, with a signing key, an HMAC-SHA256 over the object name and payload,
// so that a reader with the key loads only what a key holder published, and
// an object cannot be replayed under another name.
func Seal(name string, payload, key []byte) []byte {
	sum := sha256.Sum256(payload)
	out := make([]byte, 0, rawHeaderLen+32+len(payload))
	out = append(out, rawMagic...)
	out = append(out, rawVersion)
	flags := byte(0)
	if len(key) > 0 {
		flags |= rawFlagSigned
	}
	out = append(out, flags)
	out = append(out, sum[:]...)
	if len(key) > 0 {
		out = append(out, rawMAC(name, payload, key)...)
	}
	return append(out, payload...)
}

func rawMAC(name string, payload, key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("xlacache-raw-v1\x00"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	m.Write(n[:])
	m.Write([]byte(name))
	m.Write(payload)
	return m.Sum(nil)
}

// Unseal checks and unwraps an object made by Seal. With a key, unsigned
// objects and objects whose signature does not verify are refused.
func Unseal(name string, obj, key []byte) ([]byte, error) {
	if len(obj) < rawHeaderLen || !bytes.Equal(obj[:6], rawMagic) {
		return nil, fmt.Errorf("%w: %s: not a sealed subcache object", ErrBadObject, name)
	}
	if obj[6] != rawVersion {
		return nil, fmt.Errorf("%w: %s: envelope version %d unknown", ErrBadObject, name, obj[6])
	}
	flags := obj[7]
	if flags&^rawFlagSigned != 0 {
		return nil, fmt.Errorf("%w: %s: unknown flags %#x", ErrBadObject, name, flags)
	}
	sum := obj[8:rawHeaderLen]
	rest := obj[rawHeaderLen:]
	var mac []byte
	if flags&rawFlagSigned != 0 {
		if len(rest) < 32 {
			return nil, fmt.Errorf("%w: %s: truncated signature", ErrBadObject, name)
		}
		mac, rest = rest[:32], rest[32:]
	}
	got := sha256.Sum256(rest)
	if !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrBadObject, name)
	}
	if len(key) > 0 {
		if mac == nil {
			return nil, fmt.Errorf("%w: %s: unsigned, and a signing key is set", ErrBadObject, name)
		}
		if !hmac.Equal(mac, rawMAC(name, rest, key)) {
			return nil, fmt.Errorf("%w: %s: signature does not verify with this key", ErrBadObject, name)
		}
	}
	return rest, nil
}

// autotuneNameRE accepts XLA's autotune file names (web-safe or standard
// base64 of a SHA-256, then ".textproto") and nothing that could be a path
// or a temporary file.
// It is compiled on first use: the counted repetition makes it the most
// expensive thing in the CLI's start-up otherwise, and most runs never
// mirror a subcache.
var autotuneNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_+=\-][A-Za-z0-9_+=\-.]{0,200}\.textproto$`)
})

// ValidAutotuneName reports whether name can be an autotune cache file.
func ValidAutotuneName(name string) bool {
	return autotuneNameRE().MatchString(name) && !strings.Contains(name, "..")
}

// MirrorOptions configures a Mirror.
type MirrorOptions struct {
	// Dir is the local cache directory.
	Dir string
	// Autotune and Kernels select which raw subcaches to synchronize.
	Autotune, Kernels bool
	// SigningKey signs what is pushed and is required of what is pulled.
	SigningKey []byte
	// DirMode and FileMode are used for what the mirror creates.
	DirMode, FileMode os.FileMode
}

// MirrorStats counts what one pull or push moved.
type MirrorStats struct {
	Pulled, Pushed, Refused int
	Bytes                   int64
}

// Mirror keeps XLA's raw subcaches (which XLA reads and writes as POSIX
// files) in step with the store. It remembers, per process, which kernel
// cache parts it already merged, so a pull before every compile stays
// cheap.
type Mirror struct {
	opts MirrorOptions
	objs blob.Store

	mu     sync.Mutex
	merged map[string]bool // kernel parts merged into the local file
	pushed map[string]bool // local kernel file versions published
}

// NewMirror returns a Mirror of opts.Dir onto objs.
func NewMirror(objs blob.Store, opts MirrorOptions) *Mirror {
	if opts.DirMode == 0 {
		opts.DirMode = 0o700
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o600
	}
	return &Mirror{opts: opts, objs: objs, merged: map[string]bool{}, pushed: map[string]bool{}}
}

// Pull copies autotune files the store has and the local directory lacks,
// and merges published kernel cache parts into the local kernel cache file.
// Every object is verified (and its signature checked when a key is set)
// before it is written; writes are atomic (temporary file, then rename).
func (m *Mirror) Pull(ctx context.Context) (MirrorStats, error) {
	var st MirrorStats
	var errs []error
	if m.opts.Autotune {
		if err := m.pullAutotune(ctx, &st); err != nil {
			errs = append(errs, err)
		}
	}
	if m.opts.Kernels {
		if err := m.pullKernels(ctx, &st); err != nil {
			errs = append(errs, err)
		}
	}
	return st, errors.Join(errs...)
}

// Push publishes local autotune files the store lacks, and the local kernel
// cache file as a new part when its content is new. First writer wins.
func (m *Mirror) Push(ctx context.Context) (MirrorStats, error) {
	var st MirrorStats
	var errs []error
	if m.opts.Autotune {
		if err := m.pushAutotune(ctx, &st); err != nil {
			errs = append(errs, err)
		}
	}
	if m.opts.Kernels {
		if err := m.pushKernels(ctx, &st); err != nil {
			errs = append(errs, err)
		}
	}
	return st, errors.Join(errs...)
}

func (m *Mirror) pullAutotune(ctx context.Context, st *MirrorStats) error {
	objs, err := m.objs.List(ctx, AutotuneDir+"/")
	if err != nil {
		return fmt.Errorf("listing %s: %w", AutotuneDir, err)
	}
	local := layout.Dir(m.opts.Dir).XLAAutotune()
	var errs []error
	for _, o := range objs {
		obj := o.Name
		base, ok := strings.CutPrefix(obj, AutotuneDir+"/")
		if !ok || !ValidAutotuneName(base) {
			st.Refused++
			continue
		}
		dst := filepath.Join(local, base)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		data, err := m.objs.Get(ctx, obj)
		if err != nil {
			if errors.Is(err, blob.ErrNotExist) {
				continue
			}
			return errors.Join(append(errs, fmt.Errorf("fetching %s: %w", obj, err))...)
		}
		payload, err := Unseal(obj, data, m.opts.SigningKey)
		if err != nil {
			st.Refused++
			errs = append(errs, err)
			continue
		}
		if err := writeAtomic(dst, payload, m.opts.DirMode, m.opts.FileMode, false); err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", dst, err))
			continue
		}
		st.Pulled++
		st.Bytes += int64(len(payload))
	}
	return errors.Join(errs...)
}

func (m *Mirror) pushAutotune(ctx context.Context, st *MirrorStats) error {
	local := layout.Dir(m.opts.Dir).XLAAutotune()
	ents, err := os.ReadDir(local)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("reading %s: %w", local, err)
	}
	remote, err := m.objs.List(ctx, AutotuneDir+"/")
	if err != nil {
		return fmt.Errorf("listing %s: %w", AutotuneDir, err)
	}
	have := make(map[string]bool, len(remote))
	for _, r := range remote {
		have[r.Name] = true
	}
	var errs []error
	for _, e := range ents {
		if !e.Type().IsRegular() || !ValidAutotuneName(e.Name()) {
			continue
		}
		obj := AutotuneDir + "/" + e.Name()
		if have[obj] {
			continue
		}
		data, err := os.ReadFile(filepath.Join(local, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := m.objs.PutIfAbsent(ctx, obj, Seal(obj, data, m.opts.SigningKey)); err != nil {
			if errors.Is(err, blob.ErrExist) {
				continue
			}
			return errors.Join(append(errs, fmt.Errorf("publishing %s: %w", obj, err))...)
		}
		st.Pushed++
		st.Bytes += int64(len(data))
	}
	return errors.Join(errs...)
}

func (m *Mirror) pullKernels(ctx context.Context, st *MirrorStats) error {
	objs, err := m.objs.List(ctx, KernelParts+"/")
	if err != nil {
		return fmt.Errorf("listing %s: %w", KernelParts, err)
	}
	var parts [][]byte
	var partNames []string
	var errs []error
	for _, o := range objs {
		obj := o.Name
		m.mu.Lock()
		done := m.merged[obj]
		m.mu.Unlock()
		if done {
			continue
		}
		data, err := m.objs.Get(ctx, obj)
		if err != nil {
			if errors.Is(err, blob.ErrNotExist) {
				continue
			}
			return errors.Join(append(errs, fmt.Errorf("fetching %s: %w", obj, err))...)
		}
		payload, err := Unseal(obj, data, m.opts.SigningKey)
		if err != nil {
			st.Refused++
			errs = append(errs, err)
			continue
		}
		parts = append(parts, payload)
		partNames = append(partNames, obj)
	}
	if len(parts) == 0 {
		return errors.Join(errs...)
	}
	dst := layout.Dir(m.opts.Dir).XLAKernel()
	local, err := os.ReadFile(dst)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errors.Join(append(errs, fmt.Errorf("reading %s: %w", dst, err))...)
	}
	merged, used, err := MergeKernelCaches(local, parts)
	if err != nil {
		errs = append(errs, fmt.Errorf("merging into %s: %w", dst, err))
	}
	if !bytes.Equal(merged, local) {
		if err := writeAtomic(dst, merged, m.opts.DirMode, m.opts.FileMode, true); err != nil {
			return errors.Join(append(errs, fmt.Errorf("writing %s: %w", dst, err))...)
		}
		st.Bytes += int64(len(merged) - len(local))
	}
	m.mu.Lock()
	for i, ok := range used {
		if ok {
			m.merged[partNames[i]] = true
			st.Pulled++
		} else {
			st.Refused++
		}
	}
	m.mu.Unlock()
	return errors.Join(errs...)
}

func (m *Mirror) pushKernels(ctx context.Context, st *MirrorStats) error {
	src := layout.Dir(m.opts.Dir).XLAKernel()
	data, err := os.ReadFile(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("reading %s: %w", src, err)
	}
	if len(data) == 0 {
		return nil
	}
	sum := sha256.Sum256(data)
	obj := KernelParts + "/" + hex.EncodeToString(sum[:])
	m.mu.Lock()
	done := m.pushed[obj] || m.merged[obj]
	m.mu.Unlock()
	if done {
		return nil
	}
	if err := m.objs.PutIfAbsent(ctx, obj, Seal(obj, data, m.opts.SigningKey)); err != nil && !errors.Is(err, blob.ErrExist) {
		return fmt.Errorf("publishing %s: %w", obj, err)
	} else if err == nil {
		st.Pushed++
		st.Bytes += int64(len(data))
	}
	m.mu.Lock()
	m.pushed[obj] = true
	m.merged[obj] = true
	m.mu.Unlock()
	return nil
}

// MergeKernelCaches merges serialized protobuf messages (XLA's
// KernelCacheProto: a map of kernel name to compiled kernel). Protobuf
// parses concatenated messages as their merge, so a merge is a
// concatenation; records already present are dropped so that the file
// does not grow when the same part is merged twice. A part that does not
// parse as protobuf is skipped (used[i] false) rather than risk corrupting
// the local file; an unparseable local file is replaced by nothing but
// itself (returned unchanged).
func MergeKernelCaches(local []byte, parts [][]byte) (merged []byte, used []bool, err error) {
	used = make([]bool, len(parts))
	seen := map[string]bool{}
	localRecs, lerr := protoRecords(local)
	if lerr != nil {
		return local, used, fmt.Errorf("local kernel cache is not protobuf: %w", lerr)
	}
	out := append([]byte(nil), local...)
	for _, r := range localRecs {
		seen[string(r)] = true
	}
	var errs []error
	for i, p := range parts {
		recs, err := protoRecords(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("part %d: %w", i, err))
			continue
		}
		used[i] = true
		for _, r := range recs {
			if !seen[string(r)] {
				seen[string(r)] = true
				out = append(out, r...)
			}
		}
	}
	return out, used, errors.Join(errs...)
}

// protoRecords splits a serialized protobuf message into its top-level
// field records (tag and value bytes).
func protoRecords(b []byte) ([][]byte, error) {
	var recs [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if num < 1 {
			return nil, fmt.Errorf("field number %d", num)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		recs = append(recs, b[:n+m])
		b = b[n+m:]
	}
	return recs, nil
}

// writeAtomic writes data to dst so that XLA never reads a partial file.
// Unless replace is set, an existing dst is kept (autotune files are
// immutable).
func writeAtomic(dst string, data []byte, dirMode, fileMode os.FileMode, replace bool) error {
	o := atomicfile.Options{Perm: fileMode, DirPerm: dirMode}
	if replace {
		return atomicfile.Replace(dst, data, o)
	}
	_, err := atomicfile.Publish(dst, data, o)
	return err
}
