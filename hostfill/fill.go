package hostfill

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
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
	SigningKey *sign.Keys
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
	// Origin is recorded in every pack published (origin.go), and its
	// Runtime scopes fills: a pack whose runtime conflicts with it is
	// skipped. The zero Origin records nothing and fills every pack.
	Origin Origin
	// FillMemory is the memory budget of a whole fill: the pack members
	// being verified and written and the indexes being read, across
	// every concurrent request. A member larger than the budget is
	// handled alone. 0 means 256 MiB.
	FillMemory int64
	// TempGrace is how old a temporary file a fill finds in the
	// directories it writes must be before it is removed as a killed
	// writer's leftover; 0 means one hour.
	TempGrace time.Duration
}

func (o Options) fillMemory() int64 {
	if o.FillMemory > 0 {
		return o.FillMemory
	}
	return 256 << 20
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
	// Remote is the file names the store holds a verified copy of, for
	// the publisher to skip: members fetched and verified, and files this
	// host has that a trusted index lists (signed, when a key is set). A
	// name whose copies failed verification is not in it, so the
	// publisher republishes it once the host has a verified copy.
	Remote map[string]bool `json:"-"`
	// Skipped are the packs left on the store because their runtime
	// conflicts with this host's (Options.Origin), by runtime.
	Skipped []SkippedRuntime `json:",omitempty"`
	// Untagged counts packs that record no runtime (published before
	// packs had one, or by a job whose runtime exec could not tell):
	// filled as ever.
	Untagged int
}

// indexRef is one pack on the store.
type indexRef struct {
	id   string
	info blob.Info
	// packSize is the size of the pack object, from the listing.
	packSize int64
	recs     []Record
	head     head
	// read: the index was read (recs and head are its).
	read bool
	// trusted: the index may vouch for its names as published (openIndex).
	trusted bool
}

// fill copies into the directory every packed file the store has and the
// directory lacks. Packs are streamed: a member's bytes are held only
// while it is verified and written, within one memory budget for the
// whole fill (Options.FillMemory). Every file is verified before it is
// written; a file already present locally is never replaced, whatever the
// store holds under its name. A failure of the store ends the fill with
// an error wrapping blob.ErrUnavailable; what was written stays.
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
	removeStaleTemps(o)
	bud := newBudget(ctx, o.fillMemory())
	defer bud.close()
	refs, err := listIndexes(ctx, store, o, bud, &st)
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
	refs = scopeRefs(refs, o.Origin.Runtime, &st)
	byID := make(map[string]*indexRef, len(refs))
	want := map[string][]Record{}
	claimed := map[string]bool{}
	present := map[string]bool{}
	// alts are the later packs holding a wanted name, tried in order when
	// the first one's copy is refused (a forged or damaged pack published
	// first must not keep the file from every host).
	type alt struct {
		id  string
		rec Record
	}
	alts := map[string][]alt{}
	for i := range refs {
		r := &refs[i]
		byID[r.id] = r
		for _, rec := range r.recs {
			if classify(rec.Name) == fileNone {
				continue
			}
			if claimed[rec.Name] {
				if present[rec.Name] && r.trusted {
					st.Remote[rec.Name] = true
				}
				if _, ok := alts[rec.Name]; ok {
					alts[rec.Name] = append(alts[rec.Name], alt{r.id, rec})
				}
				continue
			}
			claimed[rec.Name] = true
			if _, err := o.Root.Lstat(rec.Name); err == nil {
				st.Present++
				present[rec.Name] = true
				// A name counts as published only when a trusted index
				// (signed, when a key is set) lists it and this host has
				// the file, or once a member was fetched and verified: a
				// damaged or forged copy must not keep the file from
				// being published again.
				if r.trusted {
					st.Remote[rec.Name] = true
				}
				continue
			}
			want[r.id] = append(want[r.id], rec)
			alts[rec.Name] = nil
		}
	}
	f := &fetcher{store: store, o: o, bud: bud, st: &st, writers: make(chan struct{}, writeParallel(o))}
	var errs []error
	for round := 0; len(want) > 0 && round < maxCopies; round++ {
		failed, err := f.fetchPacks(ctx, byID, want)
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

// remoteNames returns the file names a publisher on a host whose fill
// another process ran may take as published: those a trusted index lists
// and the directory holds (the fill installed them verified, or they were
// there). It reads the indexes this host has not seen (usually none: the
// fill kept copies).
func remoteNames(ctx context.Context, store blob.Store, o Options) (map[string]bool, error) {
	var st FillStats
	bud := newBudget(ctx, o.fillMemory())
	defer bud.close()
	refs, err := listIndexes(ctx, store, o, bud, &st)
	refs = scopeRefs(refs, o.Origin.Runtime, &st)
	names := map[string]bool{}
	for _, r := range refs {
		if !r.trusted {
			continue
		}
		for _, rec := range r.recs {
			if names[rec.Name] {
				continue
			}
			if _, err := o.Root.Lstat(rec.Name); err == nil {
				names[rec.Name] = true
			}
		}
	}
	return names, err
}

// listIndexes lists the store's packs and reads their indexes, from the
// local copies when there are any, else from the store (then kept). Each
// index is read within the fill's memory budget; its records are kept.
func listIndexes(ctx context.Context, store blob.Store, o Options, bud *budget, st *FillStats) ([]indexRef, error) {
	objs, err := store.List(ctx, Prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", Prefix, err)
	}
	packs := map[string]int64{}
	var refs []indexRef
	for _, obj := range objs {
		base := strings.TrimPrefix(obj.Name, Prefix)
		if id, ok := strings.CutSuffix(base, packSuffix); ok && validID(id) {
			packs[id] = obj.Size
		}
	}
	for _, obj := range objs {
		base := strings.TrimPrefix(obj.Name, Prefix)
		// An index is written after its pack: one without a pack is a
		// publish in progress (or a pack pruned away).
		if id, ok := strings.CutSuffix(base, indexSuffix); ok && validID(id) {
			if size, ok := packs[id]; ok {
				refs = append(refs, indexRef{id: id, info: obj, packSize: size})
			}
		}
	}
	st.Indexes = len(refs)
	var mu sync.Mutex
	var errs []error
	var refused atomic.Int64
	each(ctx, o.parallel(), len(refs), func(i int) {
		r := &refs[i]
		limit := o.maxObject()
		if r.info.Size > limit {
			refused.Add(1)
			return
		}
		// The listing's size bounds what the read may hold.
		cost := max(r.info.Size, 1)
		if err := bud.acquire(cost); err != nil {
			return
		}
		defer bud.release(cost)
		local := stateRel + "/" + r.id + indexSuffix
		if b, err := atomicfile.ReadRegular(o.Root, local, min(limit, max(r.info.Size, 0))); err == nil {
			if h, trusted, err := openIndex(b, r.id, o.SigningKey); err == nil {
				r.recs, r.head, r.trusted, r.read = h.recs, h, trusted, true
				return
			}
		}
		b, err := getBounded(ctx, store, Prefix+r.id+indexSuffix, limit)
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
		h, trusted, err := openIndex(b, r.id, o.SigningKey)
		if err != nil {
			refused.Add(1)
			return
		}
		r.recs, r.head, r.trusted, r.read = h.recs, h, trusted, true
		// A copy spares the next fill this request; losing it costs only that.
		_, _ = atomicfile.Publish(local, b, o.writeOpts())
	})
	st.Refused += int(refused.Load())
	return refs, errors.Join(errs...)
}

// fetcher downloads packs and installs their wanted members.
type fetcher struct {
	store   blob.Store
	o       Options
	bud     *budget
	writers chan struct{} // bounds the files written at once, across packs

	mu                    sync.Mutex // guards st and the flags
	st                    *FillStats
	loggedBad, loggedWrit bool
}

// fetchPacks streams the packs holding wanted files and installs them. It
// returns the wanted names not installed from them (absent, damaged,
// refused), for the next copy to be tried.
func (f *fetcher) fetchPacks(ctx context.Context, byID map[string]*indexRef, want map[string][]Record) (failed []string, err error) {
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var mu sync.Mutex
	var errs []error
	each(ctx, f.o.parallel(), len(ids), func(i int) {
		id := ids[i]
		bad, err := f.fetchPack(ctx, byID[id], want[id])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
		failed = append(failed, bad...)
	})
	return failed, errors.Join(errs...)
}

// logBad logs the first verification failure of the fill; f.mu is held.
func (f *fetcher) logBad(msg string, args ...any) {
	if !f.loggedBad {
		f.loggedBad = true
		f.o.logger().Warn(msg, args...)
	}
}

// logWrite logs the first local write failure of the fill; f.mu is held.
func (f *fetcher) logWrite(name string, err error) {
	if !f.loggedWrit {
		f.loggedWrit = true
		f.o.logger().Warn("xlacache: writing a fetched file into the cache directory failed", "file", name, "err", err)
	}
}

// memberCost is what reading a member of sealedSize bytes holds; a
// compressed one is charged its declared payload size too once its header
// is read.
func memberCost(sealedSize uint64) int64 { return int64(sealedSize) }

// fetchPack streams pack id, whose index is ref, and installs the members
// named by wanted in one atomicfile.Batch: every file's bytes go to a
// temporary file, one flush makes them all durable, and only then do they
// get their names, so a crash mid-fill leaves no name pointing at
// unflushed bytes. Members are read one at a time, each within the fill's
// budget, verified and written by at most writeParallel workers; the
// others are read past without being kept. The pack's head must match its
// index, and its CRC and name (its SHA-256) its bytes, or nothing of it is
// installed.
func (f *fetcher) fetchPack(ctx context.Context, ref *indexRef, wanted []Record) (failed []string, storeErr error) {
	o := f.o
	failAll := func() []string {
		names := make([]string, len(wanted))
		for i, r := range wanted {
			names[i] = r.Name
		}
		return names
	}
	refuse := func(err error) []string {
		f.mu.Lock()
		f.st.Refused += len(wanted)
		f.logBad("xlacache: a shared pack failed verification; its files were not installed", "pack", ref.id, "err", err)
		f.mu.Unlock()
		return failAll()
	}
	rc, info, err := f.store.Open(ctx, Prefix+ref.id+packSuffix)
	if err != nil {
		if isStoreFailure(err) {
			return failAll(), err
		}
		if !errors.Is(err, blob.ErrNotExist) {
			f.mu.Lock()
			f.st.Refused += len(wanted)
			f.mu.Unlock()
		}
		return failAll(), nil
	}
	defer rc.Close()
	f.mu.Lock()
	f.st.PacksFetched++
	f.mu.Unlock()
	if info.Size < 0 || info.Size > o.maxObject() {
		return refuse(fmt.Errorf("%w: %d bytes (bound %d)", errBadPack, info.Size, o.maxObject())), nil
	}
	// What the pack's head must be: its index's, kind aside. Its bodies
	// are then exactly the records' sizes.
	head, err := encodeHead(ref.head.meta, ref.recs, kindPack)
	if err != nil {
		return refuse(err), nil
	}
	var bodies int64
	for _, r := range ref.recs {
		bodies += int64(r.SealedSize)
	}
	if int64(len(head))+bodies+crcSize != info.Size {
		return refuse(fmt.Errorf("%w: %d bytes, its index declares %d", errBadPack, info.Size, int64(len(head))+bodies+crcSize)), nil
	}
	sum, crc := sha256.New(), crc32.New(castagnoli)
	br := bufio.NewReaderSize(rc, 64<<10)
	body := io.TeeReader(io.LimitReader(br, info.Size-crcSize), io.MultiWriter(sum, crc))
	readErr := func(err error) ([]string, error) {
		if isStoreFailure(err) {
			return failAll(), fmt.Errorf("reading pack %s: %w", ref.id, err)
		}
		return refuse(fmt.Errorf("reading: %w", err)), nil
	}
	got := make([]byte, len(head))
	if _, err := io.ReadFull(body, got); err != nil {
		return readErr(err)
	}
	if !bytes.Equal(got, head) {
		return refuse(fmt.Errorf("%w: head does not match its index", errBadPack)), nil
	}
	got = nil
	batch, err := atomicfile.NewBatch(o.writeOpts())
	if err != nil {
		f.mu.Lock()
		f.logWrite("", err)
		f.mu.Unlock()
		return failAll(), nil
	}
	wantSet := make(map[string]Record, len(wanted))
	for _, r := range wanted {
		wantSet[r.Name] = r
	}
	type job struct {
		m    Member
		cost int64
	}
	var (
		wmu      sync.Mutex
		verified = map[string]bool{}
		jobs     = make(chan job)
		wg       sync.WaitGroup
	)
	for range writeParallel(o) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for jb := range jobs {
				f.install(ctx, batch, jb.m, &wmu, verified)
				jb.m.Sealed = nil
				f.bud.release(jb.cost)
			}
		}()
	}
	var streamErr error
	for _, r := range ref.recs {
		if _, ok := wantSet[r.Name]; !ok {
			if _, err := io.CopyN(io.Discard, body, int64(r.SealedSize)); err != nil {
				streamErr = err
				break
			}
			continue
		}
		cost := memberCost(r.SealedSize)
		if err := f.bud.acquire(cost); err != nil {
			streamErr = err
			break
		}
		buf := make([]byte, r.SealedSize)
		if _, err := io.ReadFull(body, buf); err != nil {
			f.bud.release(cost)
			streamErr = err
			break
		}
		if h, _, err := entry.ParseHeader(buf); err == nil && h.Codec == entry.CodecZstd {
			// Decompressing takes the declared size besides: charged
			// before it is allocated (a forged size is refused by the
			// checksum or signature first, or costs only budget).
			f.bud.release(cost)
			cost = int64(r.SealedSize) + h.RawSize
			if err := f.bud.acquire(cost); err != nil {
				streamErr = err
				break
			}
		}
		jobs <- job{Member{Record: r, Sealed: buf}, cost}
	}
	close(jobs)
	wg.Wait()
	if streamErr == nil {
		var tail [crcSize + 1]byte
		// The bodies ended exactly at the limit (their sizes add up);
		// the CRC follows, and nothing after it.
		n, _ := io.ReadFull(br, tail[:])
		switch {
		case n != crcSize:
			streamErr = fmt.Errorf("%w: %d trailing bytes, want %d", errBadPack, n, crcSize)
		case binary.LittleEndian.Uint32(tail[:]) != crc.Sum32():
			streamErr = fmt.Errorf("%w: checksum %08x, want %08x", errBadPack, crc.Sum32(), binary.LittleEndian.Uint32(tail[:]))
		default:
			sum.Write(tail[:crcSize])
			if fmt.Sprintf("%x", sum.Sum(nil)[:16]) != ref.id {
				streamErr = fmt.Errorf("%w: content does not match its name", errBadPack)
			}
		}
	}
	if streamErr != nil || ctx.Err() != nil {
		batch.Abort()
		if ctx.Err() != nil {
			return failAll(), ctx.Err()
		}
		return readErr(streamErr)
	}
	res, err := batch.Commit(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	installed := map[string]bool{}
	for _, r := range res {
		switch {
		case r.Err != nil && ctx.Err() != nil:
		case r.Err != nil:
			f.logWrite(r.Path, r.Err)
		case r.Created:
			f.st.Files++
			f.st.Bytes += int64(r.Size)
			installed[r.Path] = true
		default:
			f.st.Present++
			installed[r.Path] = true
		}
	}
	if err != nil && ctx.Err() == nil {
		f.logWrite("", err)
	}
	for name := range verified {
		// Verified member of a pack whose every byte checked out: the
		// store holds a good copy.
		f.st.Remote[name] = true
	}
	for _, r := range wanted {
		if !verified[r.Name] {
			failed = append(failed, r.Name)
		}
	}
	return failed, nil
}

// install verifies member m and adds it to batch; verified names go in
// verified (under wmu).
func (f *fetcher) install(ctx context.Context, batch *atomicfile.Batch, m Member, wmu *sync.Mutex, verified map[string]bool) {
	f.writers <- struct{}{}
	defer func() { <-f.writers }()
	if ctx.Err() != nil {
		return
	}
	data, _, err := unseal(m, f.o.SigningKey)
	if err != nil {
		f.mu.Lock()
		f.st.Refused++
		f.logBad("xlacache: a shared file failed verification and was not installed", "file", m.Name, "err", err)
		f.mu.Unlock()
		return
	}
	wmu.Lock()
	verified[m.Name] = true
	wmu.Unlock()
	// First writer wins: a file that appeared locally meanwhile (JAX
	// wrote it) is kept, here and again when the batch links.
	added, err := batch.Add(m.Name, data)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
		f.logWrite(m.Name, err)
	case !added:
		f.st.Present++
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
