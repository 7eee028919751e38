// Package rawfiles is the one home of XLA's raw files as they sit in a
// cache directory (names in internal/layout): XLA's autotune results, one
// text-proto file per fused kernel, and XLA's kernel cache, one binary
// protobuf file. ("Subcache" in xlacache names the cpu backend's tiers
// too; these are the files XLA itself reads and writes.) It validates
// their names and content, merges kernel cache versions, and mirrors both
// to and from a shared blob.Store (Mirror), since XLA reads them only from
// a POSIX path.
package rawfiles

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// MirrorOptions configures a Mirror.
type MirrorOptions struct {
	// Dir is the local cache directory.
	Dir string
	// Root, when set, is Dir opened as an *os.Root (the cache's): every
	// local file operation goes through it, so that a symbolic link
	// planted in the directory cannot redirect a write. When nil, each
	// Pull or Push opens its own root on Dir.
	Root *os.Root
	// Autotune and Kernels select which raw subcaches to synchronize.
	Autotune, Kernels bool
	// SigningKey signs what is pushed and is required of what is pulled.
	SigningKey *sign.Keys
	// DirMode and FileMode are used for what the mirror creates.
	DirMode, FileMode os.FileMode
	// MaxObjectSize bounds the objects read from the store
	// (config.Options.SharedMaxObjectSize; 0 for the default), lowered
	// to half the memory the process can still allocate. A larger object
	// is refused from its size, without being read.
	MaxObjectSize int64
	// CompactGrace is how long a kernel cache part must have been on the
	// store before a writer deletes the parts whose records it holds
	// (compactKernels): readers that listed those parts before it
	// appeared fetch them within it. 0 means 15 minutes.
	CompactGrace time.Duration
}

// MirrorStats counts what one pull or push moved.
type MirrorStats struct {
	Pulled, Pushed, Refused int
	// Replaced counts store objects a push found damaged (or over the
	// size bound) and replaced with the local file.
	Replaced int
	Bytes    int64
	// Compacted counts merged kernel cache parts a push published, and
	// Removed the parts it deleted because a merged part holds them.
	Compacted, Removed int
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
	// parts are the records of the kernel parts this Mirror fetched and
	// verified or published, by part name: what the store has, for the
	// deltas pushes publish.
	parts map[string]*partIndex
	clock func() time.Time // nil: time.Now; a seam for tests
}

// NewMirror returns a Mirror of opts.Dir onto objs.
func NewMirror(objs blob.Store, opts MirrorOptions) *Mirror {
	if opts.DirMode == 0 {
		opts.DirMode = 0o700
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o600
	}
	return &Mirror{opts: opts, objs: objs, merged: map[string]bool{}, pushed: map[string]bool{},
		parts: map[string]*partIndex{}}
}

// Pull copies autotune files the store has and the local directory lacks,
// and merges published kernel cache parts into the local kernel cache file,
// streaming them one at a time (its memory does not grow with their size).
// Every object is verified (and its signature checked when a key is set)
// before it is written; writes are atomic (temporary file, then rename).
func (m *Mirror) Pull(ctx context.Context) (MirrorStats, error) {
	return m.both(ctx, m.pullAutotune, m.pullKernels)
}

// Push publishes local autotune files the store lacks, and the records of
// the local kernel cache file that the store lacks as a new part (a
// delta); it compacts the kernel parts when they have grown to more than
// twice what they hold. First writer wins.
// Keys that verify but cannot sign (an Ed25519 reader) push nothing: what
// they sealed would be unsigned, refused by every host with keys.
func (m *Mirror) Push(ctx context.Context) (MirrorStats, error) {
	if k := m.opts.SigningKey; k.Enabled() && !k.CanSign() {
		return MirrorStats{}, fmt.Errorf("pushing subcaches: %w", sign.ErrCannotSign)
	}
	return m.both(ctx, m.pushAutotune, m.pushKernels)
}

// both runs autotune and kernels for the subcaches the options select; a
// failure of one does not stop the other.
func (m *Mirror) both(ctx context.Context, autotune, kernels func(context.Context, *os.Root, *MirrorStats) error) (MirrorStats, error) {
	var st MirrorStats
	if !m.opts.Autotune && !m.opts.Kernels {
		return st, nil
	}
	root := m.opts.Root
	if root == nil {
		var err error
		if root, err = m.openRoot(); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return st, nil // nothing local to push, nowhere to pull to
			}
			return st, err
		}
		defer root.Close()
	}
	var errs []error
	if m.opts.Autotune {
		errs = append(errs, autotune(ctx, root, &st))
	}
	if m.opts.Kernels {
		errs = append(errs, kernels(ctx, root, &st))
	}
	return st, errors.Join(errs...)
}

// openRoot opens Dir (symbolic links in its name resolved) as a root.
func (m *Mirror) openRoot() (*os.Root, error) {
	dir, err := filepath.EvalSymlinks(m.opts.Dir)
	if err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// fetch gets and unseals obj and checks the payload with verify (when not
// nil). ok is false when there is nothing to use: the object vanished
// since it was listed, or it was refused (counted in st, its error added
// to bad). err is a store failure, which ends the caller's pull.
func (m *Mirror) fetch(ctx context.Context, obj string, verify func([]byte) error, st *MirrorStats, bad *[]error) (payload []byte, ok bool, err error) {
	data, _, err := m.read(ctx, obj)
	switch {
	case errors.Is(err, blob.ErrNotExist):
		return nil, false, nil
	case errors.Is(err, blob.ErrTooLarge):
		st.Refused++
		*bad = append(*bad, fmt.Errorf("%w: %s: %w", ErrBadObject, obj, err))
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("fetching %s: %w", obj, err)
	}
	payload, uerr := Unseal(obj, data, m.opts.SigningKey)
	if uerr == nil && verify != nil {
		if verr := verify(payload); verr != nil {
			uerr = fmt.Errorf("%w: %s: %v", ErrBadObject, obj, verr)
		}
	}
	if uerr != nil {
		st.Refused++
		*bad = append(*bad, uerr)
		return nil, false, nil
	}
	return payload, true, nil
}

func (m *Mirror) pullAutotune(ctx context.Context, root *os.Root, st *MirrorStats) error {
	objs, err := m.objs.List(ctx, layout.XLAAutotunePrefix)
	if err != nil {
		return fmt.Errorf("listing %s: %w", AutotuneDir, err)
	}
	local := layout.XLAAutotuneDir
	var errs []error
	for _, o := range objs {
		obj := o.Name
		base, ok := layout.XLAAutotuneBase(obj)
		if !ok || !ValidAutotuneName(base) {
			st.Refused++
			continue
		}
		dst := local + "/" + base
		if _, err := root.Lstat(dst); err == nil {
			continue
		}
		payload, ok, err := m.fetch(ctx, obj, VerifyAutotuneFile, st, &errs)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if !ok {
			continue
		}
		if err := writeAtomic(root, dst, payload, m.opts.DirMode, m.opts.FileMode, false); err != nil {
			errs = append(errs, fmt.Errorf("writing %s: %w", dst, err))
			continue
		}
		st.Pulled++
		st.Bytes += int64(len(payload))
	}
	return errors.Join(errs...)
}

func (m *Mirror) pushAutotune(ctx context.Context, root *os.Root, st *MirrorStats) error {
	local := layout.XLAAutotuneDir
	// The results directly in the directory; XLA's tmp directory holds
	// results being written.
	var names []string
	err := layout.WalkUnder(ctx, root.FS(), local, func(f layout.File, err error) error {
		if err != nil {
			if f.Rel == local {
				return err
			}
			return nil
		}
		if dir, base := path.Split(f.Rel); dir == local+"/" && f.Class.Kind == layout.XLAAutotune && f.Entry.Type().IsRegular() && ValidAutotuneName(base) {
			names = append(names, base)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("reading %s: %w", local, err)
	}
	remote, err := m.objs.List(ctx, layout.XLAAutotunePrefix)
	if err != nil {
		return fmt.Errorf("listing %s: %w", AutotuneDir, err)
	}
	have := make(map[string]blob.Info, len(remote))
	for _, r := range remote {
		have[r.Name] = r
	}
	var errs []error
	for _, name := range names {
		obj := layout.XLAAutotuneObject(name)
		data, err := atomicfile.ReadRegular(root, local+"/"+name, maxLocalFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if VerifyAutotuneFile(data) != nil {
			// Damaged or not XLA's: pulls would refuse it, so publishing it
			// would only waste the upload.
			continue
		}
		sealed := Seal(obj, data, m.opts.SigningKey)
		if r, ok := have[obj]; ok {
			// Present: replace it only if no host can use it.
			replaced, err := m.repair(ctx, r, sealed, func(_ string, p []byte) error { return VerifyAutotuneFile(p) })
			if err != nil {
				return errors.Join(append(errs, err)...)
			}
			if replaced {
				st.Replaced++
			}
			continue
		}
		if err := m.objs.PutIfAbsent(ctx, obj, sealed); err != nil {
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

// maxLocalFile bounds what the mirror reads of a local subcache file: XLA's
// kernel cache and autotune results are far smaller; anything larger is
// not XLA's.
const maxLocalFile = 4 << 30

// writeAtomic writes data to dst (relative to root) so that XLA never
// reads a partial file. Unless replace is set, an existing dst is kept
// (autotune files are immutable).
func writeAtomic(root *os.Root, dst string, data []byte, dirMode, fileMode os.FileMode, replace bool) error {
	o := atomicfile.Options{Perm: fileMode, DirPerm: dirMode, Root: root}
	if replace {
		return atomicfile.Replace(dst, data, o)
	}
	_, err := atomicfile.Publish(dst, data, o)
	return err
}
