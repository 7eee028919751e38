package hostfill

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/rawfiles"
)

// maxCopies bounds how many packs holding one name a fill tries.
const maxCopies = 4

// Names on the shared tier and in the local state directory.
const (
	// Prefix is where packs live on the shared tier: "<Prefix><id>.pack"
	// and its index "<Prefix><id>.index". The version is the pack format's.
	Prefix      = layout.PackPrefix
	packSuffix  = layout.PackSuffix
	indexSuffix = layout.PackIndexSuffix
	// stateRel is the directory, inside xlacache's state directory (which
	// scans, prunes and JAX leave alone), holding copies of the indexes
	// already read, the host's locks and the fill marker.
	stateRel = layout.StateDir + "/hostfill"
)

// Options configure fills and publishes of one local directory.
type Options struct {
	// Root is the cache directory, opened as an *os.Root: every local
	// read and write goes through it.
	Root *os.Root
	// SigningKey signs what is published and is required of what is
	// fetched (config.Options.SigningKey).
	SigningKey []byte
	// DirMode and FileMode are the modes of what is created.
	DirMode, FileMode os.FileMode
	// MaxObjectSize bounds a pack or index read from the store; a larger
	// object is refused from its size. 0 means config's default.
	MaxObjectSize int64
	// Parallel bounds the concurrent requests of a fill or publish; 0
	// means 8.
	Parallel int
	// PackFiles and PackBytes bound what one pack holds; 0 means 4096
	// files and 64 MiB (a file larger than PackBytes gets a pack of its
	// own).
	PackFiles int
	PackBytes int64
	// Kernels includes XLA's kernel cache file (merged from parts, see
	// rawfiles.Mirror).
	Kernels bool
	// Logger receives one line per kind of failure; nil means slog.Default.
	Logger *slog.Logger
}

func (o Options) parallel() int {
	if o.Parallel > 0 {
		return o.Parallel
	}
	return 8
}

// writeParallel bounds the files a fill writes at once. Creating files in
// one directory serializes on its lock in the kernel and on the
// filesystem's journal: beyond a few writers, more only spin.
func writeParallel(o Options) int { return min(4, o.parallel()) }

func (o Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

func (o Options) maxObject() int64 {
	if o.MaxObjectSize > 0 {
		return o.MaxObjectSize
	}
	return 4 << 30
}

func (o Options) writeOpts() atomicfile.Options {
	return atomicfile.Options{Perm: fileMode(o.FileMode), DirPerm: dirMode(o.DirMode), Root: o.Root}
}

// FillStats says what a fill did.
type FillStats struct {
	// Indexes are the pack indexes on the store; IndexesFetched the ones
	// read from the store (the rest came from the local copies).
	Indexes, IndexesFetched int
	// PacksFetched counts packs downloaded.
	PacksFetched int
	// Files and Bytes count files written into the directory.
	Files int
	Bytes int64
	// Present counts files the store has that the directory already had.
	Present int
	// Refused counts files or objects that failed verification (a bad
	// signature, a damaged pack, a file of the wrong format): none of
	// their bytes was written.
	Refused int
	// Kernels is what the kernel cache merge did.
	Kernels rawfiles.MirrorStats
	// Remote is every file name the store's packs hold, for the
	// publisher to skip.
	Remote map[string]bool `json:"-"`
}

// indexRef is one pack on the store.
type indexRef struct {
	id   string
	info blob.Info
	recs []Record
}

// fill copies into the directory every packed file the store has and the
// directory lacks. Every file is verified before it is written; a file
// already present locally is never replaced, whatever the store holds
// under its name. A failure of the store ends the fill with an error
// wrapping blob.ErrUnavailable; what was written stays.
func fill(ctx context.Context, store blob.Store, o Options) (FillStats, error) {
	st := FillStats{Remote: map[string]bool{}}
	// The kernel cache parts are listed beside the packs, at the same time:
	// a start with nothing to fetch costs one round trip, not two.
	type kernelResult struct {
		st  rawfiles.MirrorStats
		err error
	}
	kernels := make(chan kernelResult, 1)
	if o.Kernels {
		go func() {
			m := rawfiles.NewMirror(store, rawfiles.MirrorOptions{Root: o.Root, Kernels: true, SigningKey: o.SigningKey,
				DirMode: o.DirMode, FileMode: o.FileMode, MaxObjectSize: o.MaxObjectSize})
			ks, err := m.Pull(ctx)
			kernels <- kernelResult{ks, err}
		}()
	} else {
		kernels <- kernelResult{}
	}
	kernelsDone := func() error {
		r := <-kernels
		st.Kernels = r.st
		if r.err != nil {
			return fmt.Errorf("kernel cache: %w", r.err)
		}
		return nil
	}
	refs, err := listIndexes(ctx, store, o, &st)
	if err != nil {
		return st, errors.Join(err, kernelsDone())
	}
	// Earliest published first: of two packs holding one name, the first
	// writer's copy is the one hosts install.
	sort.Slice(refs, func(i, j int) bool {
		if !refs[i].info.ModTime.Equal(refs[j].info.ModTime) {
			return refs[i].info.ModTime.Before(refs[j].info.ModTime)
		}
		return refs[i].id < refs[j].id
	})
	want := map[string][]Record{}
	claimed := map[string]bool{}
	// alts are the later packs holding a wanted name, tried in order when
	// the first one's copy is refused (a forged or damaged pack published
	// first must not keep the file from every host).
	type alt struct {
		id  string
		rec Record
	}
	alts := map[string][]alt{}
	for _, r := range refs {
		for _, rec := range r.recs {
			st.Remote[rec.Name] = true
			if classify(rec.Name) == fileNone {
				continue
			}
			if claimed[rec.Name] {
				if _, ok := alts[rec.Name]; ok {
					alts[rec.Name] = append(alts[rec.Name], alt{r.id, rec})
				}
				continue
			}
			claimed[rec.Name] = true
			if _, err := o.Root.Lstat(rec.Name); err == nil {
				st.Present++
				continue
			}
			want[r.id] = append(want[r.id], rec)
			alts[rec.Name] = nil
		}
	}
	var errs []error
	for round := 0; len(want) > 0 && round < maxCopies; round++ {
		failed, err := fetchPacks(ctx, store, o, want, &st)
		if err != nil {
			errs = append(errs, err)
			break
		}
		want = map[string][]Record{}
		for _, name := range failed {
			if a := alts[name]; len(a) > 0 {
				want[a[0].id] = append(want[a[0].id], a[0].rec)
				alts[name] = a[1:]
			}
		}
	}
	errs = append(errs, kernelsDone())
	return st, errors.Join(errs...)
}

// remoteNames returns every file name the store's packs hold, for a
// publisher on a host whose fill another process ran. It reads the indexes
// this host has not seen (usually none: the fill kept copies).
func remoteNames(ctx context.Context, store blob.Store, o Options) (map[string]bool, error) {
	var st FillStats
	refs, err := listIndexes(ctx, store, o, &st)
	names := map[string]bool{}
	for _, r := range refs {
		for _, rec := range r.recs {
			names[rec.Name] = true
		}
	}
	return names, err
}

// listIndexes lists the store's packs and reads their indexes, from the
// local copies when there are any, else from the store (then kept).
func listIndexes(ctx context.Context, store blob.Store, o Options, st *FillStats) ([]indexRef, error) {
	objs, err := store.List(ctx, Prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", Prefix, err)
	}
	packs := map[string]bool{}
	var refs []indexRef
	for _, obj := range objs {
		base := strings.TrimPrefix(obj.Name, Prefix)
		if id, ok := strings.CutSuffix(base, packSuffix); ok && validID(id) {
			packs[id] = true
		}
	}
	for _, obj := range objs {
		base := strings.TrimPrefix(obj.Name, Prefix)
		// An index is written after its pack: one without a pack is a
		// publish in progress (or a pack pruned away).
		if id, ok := strings.CutSuffix(base, indexSuffix); ok && validID(id) && packs[id] {
			refs = append(refs, indexRef{id: id, info: obj})
		}
	}
	st.Indexes = len(refs)
	var mu sync.Mutex
	var errs []error
	var refused atomic.Int64
	each(ctx, o.parallel(), len(refs), func(i int) {
		r := &refs[i]
		local := stateRel + "/" + r.id + indexSuffix
		if b, err := atomicfile.ReadRegular(o.Root, local, o.maxObject()); err == nil {
			if recs, err := DecodeIndex(b); err == nil {
				r.recs = recs
				return
			}
		}
		b, err := getBounded(ctx, store, Prefix+r.id+indexSuffix, o.maxObject())
		if err != nil {
			if isStoreFailure(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			} else if !errors.Is(err, blob.ErrNotExist) {
				refused.Add(1)
			}
			return
		}
		mu.Lock()
		st.IndexesFetched++
		mu.Unlock()
		recs, err := DecodeIndex(b)
		if err != nil {
			refused.Add(1)
			return
		}
		r.recs = recs
		// A copy spares the next fill this request; losing it costs only that.
		_, _ = atomicfile.Publish(local, b, o.writeOpts())
	})
	st.Refused += int(refused.Load())
	return refs, errors.Join(errs...)
}

// fetchPacks downloads the packs holding wanted files and installs them.
func fetchPacks(ctx context.Context, store blob.Store, o Options, want map[string][]Record, st *FillStats) (failed []string, err error) {
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var mu sync.Mutex
	var errs []error
	var loggedBad, loggedWrite bool
	fail := func(names ...string) { failed = append(failed, names...) } // mu held
	// Writers are bounded across the packs being installed at once.
	writers := make(chan struct{}, writeParallel(o))
	each(ctx, o.parallel(), len(ids), func(i int) {
		id := ids[i]
		b, err := getBounded(ctx, store, Prefix+id+packSuffix, o.maxObject())
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			if isStoreFailure(err) {
				errs = append(errs, err)
				return
			}
			if !errors.Is(err, blob.ErrNotExist) {
				st.Refused++
			}
			for _, r := range want[id] {
				fail(r.Name)
			}
			return
		}
		members, err := decodePack(b)
		if err == nil && packID(b) != id {
			err = fmt.Errorf("%w: content does not match its name", errBadPack)
		}
		mu.Lock()
		st.PacksFetched++
		mu.Unlock()
		if err != nil {
			mu.Lock()
			st.Refused += len(want[id])
			for _, r := range want[id] {
				fail(r.Name)
			}
			if !loggedBad {
				loggedBad = true
				o.logger().Warn("xlacache: a shared pack failed verification; its files were not installed", "pack", id, "err", err)
			}
			mu.Unlock()
			return
		}
		byName := make(map[string]Member, len(members))
		for _, m := range members {
			byName[m.Name] = m
		}
		installPack(ctx, o, want[id], byName, writers, st, &mu, fail, &loggedBad, &loggedWrite)
	})
	return failed, errors.Join(errs...)
}

// installPack verifies a fetched pack's wanted files and installs them in
// one atomicfile.Batch: every file's bytes go to a temporary file, one
// flush makes them all durable, and only then do they get their names, so
// a crash mid-fill leaves no name pointing at unflushed bytes, at the cost
// of one flush per pack rather than one per file.
func installPack(ctx context.Context, o Options, recs []Record, byName map[string]Member, writers chan struct{}, st *FillStats,
	mu *sync.Mutex, fail func(...string), loggedBad, loggedWrite *bool) {
	writeFailed := func(name string, err error) { // mu held
		if !*loggedWrite {
			*loggedWrite = true
			o.logger().Warn("xlacache: writing a fetched file into the cache directory failed", "file", name, "err", err)
		}
	}
	batch, err := atomicfile.NewBatch(o.writeOpts())
	if err != nil {
		mu.Lock()
		writeFailed("", err)
		mu.Unlock()
		return
	}
	each(ctx, writeParallel(o), len(recs), func(k int) {
		writers <- struct{}{}
		defer func() { <-writers }()
		rec := recs[k]
		m, ok := byName[rec.Name]
		if !ok || m.Digest != rec.Digest {
			mu.Lock()
			st.Refused++
			fail(rec.Name)
			mu.Unlock()
			return
		}
		data, _, err := unseal(m, o.SigningKey)
		if err != nil {
			mu.Lock()
			st.Refused++
			fail(rec.Name)
			if !*loggedBad {
				*loggedBad = true
				o.logger().Warn("xlacache: a shared file failed verification and was not installed", "file", rec.Name, "err", err)
			}
			mu.Unlock()
			return
		}
		// First writer wins: a file that appeared locally meanwhile (JAX
		// wrote it) is kept, here and again when the batch links.
		added, err := batch.Add(rec.Name, data)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			writeFailed(rec.Name, err)
		case !added:
			st.Present++
		}
	})
	if ctx.Err() != nil {
		batch.Abort()
		return
	}
	res, err := batch.Commit(ctx)
	mu.Lock()
	defer mu.Unlock()
	for _, r := range res {
		switch {
		case r.Err != nil && ctx.Err() != nil:
		case r.Err != nil:
			writeFailed(r.Path, r.Err)
		case r.Created:
			st.Files++
			st.Bytes += int64(r.Size)
		default:
			st.Present++
		}
	}
	if err != nil && ctx.Err() == nil {
		writeFailed("", err)
	}
}

// getBounded reads an object, refusing one larger than limit from its size.
func getBounded(ctx context.Context, store blob.Store, name string, limit int64) ([]byte, error) {
	rc, info, err := store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return blob.ReadSized(rc, info, limit)
}

// isStoreFailure tells a failure of the store (or the context) from an
// object that is merely absent, too large or bad.
func isStoreFailure(err error) bool {
	return errors.Is(err, blob.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// each runs fn(0..n-1) on at most par goroutines, stopping early when ctx
// is done.
func each(ctx context.Context, par, n int, fn func(i int)) {
	if n == 0 {
		return
	}
	par = min(par, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// ensureState creates the state directory.
func ensureState(o Options) error {
	if err := atomicfile.MkdirAllIn(o.Root, stateRel, dirMode(o.DirMode)); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating %s: %w", stateRel, err)
	}
	return nil
}

func dirMode(m os.FileMode) os.FileMode {
	if m == 0 {
		return 0o700
	}
	return m
}
