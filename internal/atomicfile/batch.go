package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/xlacache/xlacache/internal/layout"
)

// Batch installs many files inside a Root as Publish does one (first
// writer wins, a present file is never replaced), with one flush to
// stable storage for the whole batch instead of one fsync per file.
//
// The order keeps Publish's guarantee that no final name ever points at
// data that is not on stable storage:
//
//  1. Add writes each file's bytes to a fresh temporary file in its
//     target's directory (O_EXCL, unpredictable name, mode 0600 until
//     finished), without an fsync.
//  2. Commit flushes them all: on Linux 5.8 and later with one syncfs(2)
//     per filesystem the batch's directories are on (earlier kernels do
//     not report writeback errors through syncfs, so there, and on other
//     systems, Add fsyncs each file as Publish does);
//  3. only then gives each temporary file its final name, never
//     replacing a file there (a rename with RENAME_NOREPLACE on Linux,
//     else a hard link and the temporary name's removal), and fsyncs each
//     directory touched once, so that the new names survive a crash too.
//
// A writer killed before or during Commit leaves only temporary files
// (layout.TempPrefix, which scans skip and remove once stale) and names
// that point at complete, flushed content. Add is safe for concurrent
// use, but not concurrently with Commit or Abort, which end the batch:
// every Add must have returned before either is called.
type Batch struct {
	o Options

	mu      sync.Mutex
	dirs    map[string]*batchDir
	files   []batchFile
	done    bool
	perFile bool // fsync each file in Add: no trustworthy syncfs here

	// Test seams: syncFS replaces the per-filesystem flush; afterLink runs
	// after the i-th file of Commit is linked.
	syncFS    func(f *os.File) error
	afterLink func(i int)
}

// batchDir is one directory of a batch, opened once so that per-file
// operations take one system call each rather than a walk from the root.
type batchDir struct {
	root   *os.Root
	handle *os.File // the directory itself, opened by Commit
	dev    uint64
	linked bool  // renameNoReplace is unsupported: link, then remove
	err    error // why the directory is unusable; every Add into it fails
}

type batchFile struct {
	rel, dir, base, tmp string
	size                int
}

// BatchResult is what Commit did with one added file.
type BatchResult struct {
	// Path is the file's path as given to Add.
	Path string
	// Created is true when this batch installed the file, false when a
	// file was already there (a lost race is not an error).
	Created bool
	// Size is the length of the content added.
	Size int
	// Err is why the file could not be installed.
	Err error
}

// NewBatch starts a batch of files written into o.Root (required); o.Perm
// and o.DirPerm apply as for Publish.
func NewBatch(o Options) (*Batch, error) {
	if o.Root == nil {
		return nil, errors.New("atomicfile: a batch needs Options.Root")
	}
	return &Batch{o: o, dirs: map[string]*batchDir{}, perFile: !syncfsReportsErrors(), syncFS: syncfs}, nil
}

// Add writes data to a temporary file beside rel (slash-separated,
// relative to the root), to be installed by Commit. It returns false
// (and writes nothing) when rel already exists. Parent directories are
// created with o.DirPerm when set; a symbolic link or other file where a
// directory belongs is refused with ErrNotRegular.
func (b *Batch) Add(rel string, data []byte) (added bool, err error) {
	if err := layout.ValidRel(rel); err != nil {
		return false, err
	}
	dirRel, base := path.Split(rel)
	dirRel = path.Clean(dirRel)
	d, err := b.dir(dirRel)
	if err != nil {
		return false, err
	}
	if _, err := d.root.Lstat(base); err == nil {
		return false, nil
	}
	var f *os.File
	var tmp string
	if b.o.CreateTemp != nil {
		// Test seam: it works on host paths.
		f, err = b.o.CreateTemp(d.root.Name(), layout.TempPrefix+"*")
		if err != nil {
			return false, err
		}
		tmp = filepath.Base(f.Name())
	} else {
		for range 100 {
			tmp = layout.TempPrefix + strconv.FormatUint(rand.Uint64(), 36)
			f, err = d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
			if err == nil || !errors.Is(err, fs.ErrExist) {
				break
			}
		}
		if err != nil {
			return false, fmt.Errorf("creating a temporary file for %s: %w", rel, err)
		}
	}
	if err := b.finish(f, data); err != nil {
		d.root.Remove(tmp)
		return false, fmt.Errorf("writing %s: %w", rel, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		d.root.Remove(tmp)
		return false, errors.New("atomicfile: Add after Commit or Abort")
	}
	b.files = append(b.files, batchFile{rel: rel, dir: dirRel, base: base, tmp: tmp, size: len(data)})
	return true, nil
}

// finish fills the temporary file, sets its final mode and closes it;
// only where syncfs cannot be trusted does it fsync it too.
func (b *Batch) finish(f *os.File, data []byte) error {
	err := b.o.write(f, data)
	if perm := b.o.perm(); err == nil && perm != 0o600 {
		err = f.Chmod(perm)
	}
	if err == nil && b.perFile {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dir returns the batch's handle on directory rel, creating or checking
// it the first time.
func (b *Batch) dir(rel string) (*batchDir, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return nil, errors.New("atomicfile: Add after Commit or Abort")
	}
	if d, ok := b.dirs[rel]; ok {
		return d, d.err
	}
	d := &batchDir{}
	b.dirs[rel] = d
	if b.o.DirPerm != 0 {
		d.err = MkdirAllIn(b.o.Root, rel, b.o.DirPerm)
	} else {
		d.err = CheckDirIn(b.o.Root, rel)
	}
	if d.err == nil {
		d.root, d.err = b.o.Root.OpenRoot(rel)
	}
	if d.err == nil {
		var st fs.FileInfo
		if st, d.err = d.root.Stat("."); d.err == nil {
			d.dev = fileDev(st)
		}
	}
	if d.err != nil {
		d.err = fmt.Errorf("directory %s: %w", rel, d.err)
	}
	return d, d.err
}

// Commit flushes every added file to stable storage, then installs each
// under its final name (unless a file is there already) and flushes the
// directories. It returns one result per added file, in the order they
// were added. When the flush fails nothing is installed and every
// temporary file is removed; the error says why. A done ctx stops the
// installing between files (what was installed stays, complete).
func (b *Batch) Commit(ctx context.Context) ([]BatchResult, error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil, errors.New("atomicfile: batch already ended")
	}
	b.done = true
	files := b.files
	b.mu.Unlock()
	defer b.closeDirs()
	res := make([]BatchResult, len(files))
	for i, f := range files {
		res[i] = BatchResult{Path: f.rel, Size: f.size}
	}
	if len(files) == 0 {
		return res, nil
	}
	if !b.perFile {
		if err := b.flushFilesystems(files); err != nil {
			b.removeTemps(files)
			for i := range res {
				res[i].Err = err
			}
			return res, err
		}
	}
	var errs []error
	for i, f := range files {
		d := b.dirs[f.dir]
		if err := ctx.Err(); err != nil {
			res[i].Err = err
		} else {
			res[i].Created, res[i].Err = d.install(f.tmp, f.base)
		}
		if !res[i].Created || d.linked {
			// After a link the temporary name is just a second name.
			d.root.Remove(f.tmp)
		}
		if res[i].Err != nil {
			res[i].Err = fmt.Errorf("installing %s: %w", f.rel, res[i].Err)
			errs = append(errs, res[i].Err)
		}
		if b.afterLink != nil {
			b.afterLink(i)
		}
	}
	// The names are what a crash would otherwise lose now: one fsync per
	// directory covers every link of the batch.
	for rel, d := range b.dirs {
		if d.root == nil {
			continue
		}
		if err := d.sync(); err != nil {
			errs = append(errs, fmt.Errorf("flushing directory %s: %w", rel, err))
		}
	}
	return res, errors.Join(errs...)
}

// errNoReplace says renameNoReplace is not supported here.
var errNoReplace = errors.New("rename without replacing: not supported")

// install gives the temporary file tmp its final name, first writer wins:
// with one rename that fails when the name exists (Linux's
// RENAME_NOREPLACE), else a hard link (d.linked: the caller removes the
// temporary name), else, where neither is supported, a rename after an
// existence check, as PublishFrom does.
func (d *batchDir) install(tmp, name string) (bool, error) {
	if d.handle == nil && !d.linked {
		h, err := d.root.Open(".")
		if err != nil {
			return false, err
		}
		d.handle = h
	}
	if !d.linked {
		err := renameNoReplace(d.handle, tmp, name)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, fs.ErrExist):
			return false, nil
		case !errors.Is(err, errNoReplace):
			return false, err
		}
		d.linked = true
	}
	dir := d.root
	lerr := dir.Link(tmp, name)
	switch {
	case lerr == nil:
		return true, nil
	case errors.Is(lerr, fs.ErrExist):
		return false, nil
	}
	if _, err := dir.Lstat(name); err == nil {
		return false, nil
	}
	if err := dir.Rename(tmp, name); err != nil {
		return false, err
	}
	return true, nil
}

// flushFilesystems runs one syncfs per filesystem the batch's
// directories are on (a directory of the tree may be a mount point).
func (b *Batch) flushFilesystems(files []batchFile) error {
	seen := map[uint64]bool{}
	for _, f := range files {
		d := b.dirs[f.dir]
		if seen[d.dev] {
			continue
		}
		seen[d.dev] = true
		h, err := d.root.Open(".")
		if err != nil {
			return fmt.Errorf("flushing the batch: %w", err)
		}
		err = b.syncFS(h)
		h.Close()
		if err != nil {
			return fmt.Errorf("flushing the batch to stable storage: %w", err)
		}
	}
	return nil
}

// Abort removes every temporary file of the batch; nothing is installed.
func (b *Batch) Abort() {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return
	}
	b.done = true
	files := b.files
	b.mu.Unlock()
	b.removeTemps(files)
	b.closeDirs()
}

func (b *Batch) removeTemps(files []batchFile) {
	for _, f := range files {
		b.dirs[f.dir].root.Remove(f.tmp)
	}
}

func (b *Batch) closeDirs() {
	for _, d := range b.dirs {
		if d.handle != nil {
			d.handle.Close()
		}
		if d.root != nil {
			d.root.Close()
		}
	}
}

// sync flushes the directory's entries to stable storage.
func (d *batchDir) sync() error {
	if d.handle == nil {
		h, err := d.root.Open(".")
		if err != nil {
			return err
		}
		d.handle = h
	}
	return d.handle.Sync()
}
