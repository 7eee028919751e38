package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/inuse"
	"github.com/xlacache/xlacache/internal/layout"
)

// Background trimming in resumable passes.
//
// A full scan of a big directory (300,000 files) takes longer than many
// runs last, and Close cancels background work: a trim that needs the whole
// scan before it removes anything never gets there, and the size bound is
// never enforced. So the background trim works one directory (a chunk: a
// shard of a tier, the quarantine, XLA's autotune directory) at a time,
// removing in each chunk the files that a whole-directory LRU trim would
// remove, and records after each chunk how far it got in the trim cursor
// (layout.TrimCursorRel). The next writer process resumes the pass from
// there: repeated short runs converge under the bound.
//
// What to remove comes from a fraction fixed at the start of the pass
// (remove the least recently used (total-target)/total of the bytes, total
// from the size ledger) and from the ages of the files seen so far in the
// pass: a histogram of bytes by age, persisted with the cursor, whose
// quantile at that fraction is the age cutoff. Keys spread entries
// uniformly over the shards, so after a few shards the cutoff is the
// whole directory's. A directory's own files are visited after its
// subdirectories, so the few files at the top (XLA's kernel cache file) are
// judged against a histogram of everything else.
//
// Prune (explicit, exact) still scans everything and sorts; it discards
// any unfinished pass.

// trimCursorVersion is the version of the cursor file's format.
const trimCursorVersion = 1

// ageBuckets is the size of the age histogram: bucket i holds ages a with
// floor(ageBucketsPerOctave*log2(1+a/s)) == i, a resolution of about 9%
// up to ages far beyond any cache's life.
const (
	ageBuckets          = 320
	ageBucketsPerOctave = 8
)

// trimCursor is the persisted state of an unfinished trim pass.
type trimCursor struct {
	Version int `json:"version"`
	// Started is when the pass started: file ages are measured from it.
	Started time.Time `json:"started"`
	// Bound and Target are the options the pass trims for; a process with
	// other options starts a new pass.
	Bound  int64 `json:"bound"`
	Target int64 `json:"target"`
	// Fraction of the bytes (the least recently used) the pass removes.
	Fraction float64 `json:"fraction"`
	// LedgerStart is the ledger total when the pass started; the pass
	// subtracts what it removes as it goes.
	LedgerStart int64 `json:"ledger_start"`
	// Done is the last chunk (directory, slash-separated, "." for the top)
	// completed, in the pass's post-order; "" when none.
	Done string `json:"done"`
	// Chunks, Files and Scanned count the completed chunks, their counted
	// files and the bytes left in them, less the bytes of this cache's
	// puts during the pass that the ledger counts already (trimPutLog).
	Chunks  int   `json:"chunks"`
	Files   int   `json:"files"`
	Scanned int64 `json:"scanned"`
	// Removed, RemovedBytes and StaleTemps count what the pass removed.
	Removed      int   `json:"removed"`
	RemovedBytes int64 `json:"removed_bytes"`
	StaleTemps   int   `json:"stale_temps"`
	// Hist holds the bytes of the completed chunks' counted files (before
	// removal) by age bucket.
	Hist []int64 `json:"hist"`
	// Seed is the same for a sample of shards taken when the pass started,
	// so that the first chunks are not judged by their own files alone.
	Seed []int64 `json:"seed"`
}

// trimCursorMax bounds the cursor file read back: a histogram and a path.
const trimCursorMax = 64 << 10

// loadTrimCursor returns the unfinished pass recorded in the directory, or
// nil when there is none or it cannot be used (a damaged cursor only costs
// a pass started again).
func (c *Cache) loadTrimCursor() *trimCursor {
	b, err := atomicfile.ReadRegular(c.root, layout.TrimCursorRel, trimCursorMax)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.logger.Debug("ignoring unreadable trim cursor", "path", layout.Dir(c.dir).TrimCursor(), "err", err)
		}
		return nil
	}
	var cur trimCursor
	if err := json.Unmarshal(b, &cur); err != nil || cur.Version != trimCursorVersion || len(cur.Hist) != ageBuckets || len(cur.Seed) != ageBuckets ||
		(cur.Done != "" && cur.Done != "." && layout.ValidRel(cur.Done) != nil) || cur.Fraction < 0 || cur.Fraction > 1 {
		c.logger.Debug("ignoring damaged trim cursor", "path", layout.Dir(c.dir).TrimCursor(), "err", err)
		return nil
	}
	return &cur
}

// saveTrimCursor records cur for the next process.
func (c *Cache) saveTrimCursor(cur *trimCursor) error {
	b, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	return atomicfile.Replace(layout.TrimCursorRel, b, atomicfile.Options{Root: c.root, Perm: c.opts.EffectiveFileMode()})
}

// dropTrimCursor forgets an unfinished pass (it completed, or an exact
// trim made it moot).
func (c *Cache) dropTrimCursor() {
	if c.root == nil {
		return
	}
	if err := c.root.Remove(layout.TrimCursorRel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Debug("removing trim cursor", "err", err)
	}
}

// trimPending reports whether an unfinished trim pass is recorded.
func (c *Cache) trimPending() bool {
	if c.root == nil {
		return false
	}
	_, err := c.root.Lstat(layout.TrimCursorRel)
	return err == nil
}

// trimChunkBudget, when positive, ends a process's trim pass after that
// many chunks as if the process had been closed: tests and benchmarks of
// convergence across short runs set it.
var trimChunkBudget atomic.Int64

// errTrimPaused: the pass stopped before the end (the cache is closing, or
// a test's chunk budget ran out); the cursor records where.
var errTrimPaused = errors.New("trim pass paused")

// cursorSaveInterval bounds how often a pass rewrites its cursor: a
// process killed outright redoes at most that much work.
const cursorSaveInterval = 100 * time.Millisecond

// trimPass runs (or resumes) a trim pass until it completes or ctx ends.
// again is true when the pass completed, removed something, and the
// directory is still over bound: the caller should run another.
func (c *Cache) trimPass(ctx context.Context, bound, target int64) (again bool, err error) {
	if c.dir == "" || !c.writer || c.root == nil {
		return false, nil
	}
	lock, err := c.lockTrim()
	if err != nil {
		return false, err
	}
	defer lock.Unlock()
	// Before the ledger is read: a put from now on is either in the
	// ledger's starting total or in the log.
	c.trimPuts.start()
	defer c.trimPuts.stop()

	cur := c.loadTrimCursor()
	if cur != nil && (cur.Bound != bound || cur.Target != target) {
		cur = nil // the options changed: start over
	}
	if cur == nil {
		cur = &trimCursor{Version: trimCursorVersion, Started: time.Now(), Bound: bound, Target: target, Hist: make([]int64, ageBuckets), Seed: make([]int64, ageBuckets)}
		if c.ledger != nil {
			cur.LedgerStart, _, _ = c.ledger.read()
		}
		// An unknown total (0: no ledger yet) makes this a counting pass;
		// the next one knows the total.
		if bound > 0 && cur.LedgerStart > bound {
			cur.Fraction = float64(cur.LedgerStart-target) / float64(cur.LedgerStart)
			c.seedAges(cur)
		}
	}
	// A short run must not stop the pass as soon as it closes: it keeps
	// going for a budget that grows with the excess (passBudget).
	ctx, stop := passContext(ctx, passBudget(bound, cur))
	defer stop()
	// The trim lock keeps other xlacache trims out; the guard covers the
	// writers no lock reaches (XLA, JAX, other hosts).
	guard := inuse.New(c.dir, c.root, 0, nil)
	budget := trimChunkBudget.Load()
	lastSave := time.Now()
	chunks := 0
	walkErr := c.walkChunks(ctx, cur.Done, func(rel string) error {
		if budget > 0 && int64(chunks) >= budget {
			return errTrimPaused
		}
		if ctx.Err() != nil {
			return errTrimPaused
		}
		c.trimChunk(cur, guard, rel)
		chunks++
		if time.Since(lastSave) >= cursorSaveInterval {
			lastSave = time.Now()
			if err := c.saveTrimCursor(cur); err != nil {
				return fmt.Errorf("saving the trim cursor: %w", err)
			}
		}
		return nil
	})
	if walkErr != nil {
		if errors.Is(walkErr, errTrimPaused) || ctx.Err() != nil {
			if err := c.saveTrimCursor(cur); err != nil {
				return false, fmt.Errorf("saving the trim cursor: %w", err)
			}
			c.logger.Debug("trim pass paused", "dir", c.dir, "done", cur.Done, "chunks", cur.Chunks, "removed_files", cur.Removed)
			return false, errTrimPaused
		}
		// Keep what was done: the next pass resumes after the last
		// completed chunk.
		if err := c.saveTrimCursor(cur); err != nil {
			c.logger.Debug("saving the trim cursor", "err", err)
		}
		return false, walkErr
	}

	// The pass is complete: the ledger gets the scanned truth plus what
	// puts added meanwhile (the ledger moved from LedgerStart to its
	// current value, minus what the pass removed).
	var total int64 = cur.Scanned
	if c.ledger != nil {
		err := c.ledger.locked(func() error {
			now, _, err := c.ledger.readLocked()
			if err != nil {
				return err
			}
			total = cur.Scanned + max(0, now-cur.LedgerStart+cur.RemovedBytes)
			if bound <= 0 && now > 0 {
				// Nothing to enforce (the pass only cleared stale
				// temporaries): keep the running total. Another writer's
				// put that landed in a shard before the pass scanned it
				// is in both Scanned and the ledger's growth, so a
				// recount would count it twice.
				total = now
			}
			return c.ledger.writeLocked(total, time.Now())
		})
		if err != nil {
			return false, err
		}
	}
	c.dropTrimCursor()
	if cur.Removed > 0 {
		c.logger.Info("trimmed cache", "dir", c.dir, "removed_files", cur.Removed, "removed_bytes", cur.RemovedBytes, "bytes", total, "max_size", bound)
	}
	// Again when this pass removed something and the directory is still
	// over, or when it only counted (the ledger had no total) and found
	// it over: the next pass knows how much to remove.
	return bound > 0 && total > bound && (cur.Removed > 0 || cur.Fraction == 0), nil
}

// Budgets of a pass that its process's Close would cut short. A writer
// that runs for a moment (a CLI compile, a hit) and closes used to stop
// its background pass at once: a 300,000-file directory twice over its
// bound took about 250 such runs, each finishing one shard, to get under
// it. Now the pass runs on after Close for up to a budget that grows with
// the share of the directory to remove, from passBudgetMin (a pass of
// unknown excess: the ledger had no total) up to passBudgetMax (a
// directory twice over its bound), measured from the pass's start: a
// process that ran longer than that has given its pass the time already,
// and Close does not wait at all. A pass that finishes sooner ends sooner.
const (
	passBudgetPerFraction = 8 * time.Second
	passBudgetMin         = time.Second
	passBudgetMax         = 5 * time.Second
)

// passBudget is how long a pass for bound, in the state cur, may run on
// after the cache's background context ends: nothing when there is no
// bound or the ledger says the directory is within it (a recount only),
// else the removal fraction times passBudgetPerFraction, clamped.
func passBudget(bound int64, cur *trimCursor) time.Duration {
	switch {
	case bound <= 0:
		return 0
	case cur.Fraction <= 0 && cur.LedgerStart > 0:
		return 0 // within the bound: a recount, not worth a wait
	}
	if d := passBudgetOverride.Load(); d > 0 {
		return time.Duration(d)
	}
	d := time.Duration(cur.Fraction * float64(passBudgetPerFraction))
	return min(max(d, passBudgetMin), passBudgetMax)
}

// passBudgetOverride, when positive, replaces the budget of every pass
// that gets one: a test on a loaded machine sets it long, so that what it
// checks (the pass goes on after Close) does not depend on the machine's
// speed.
var passBudgetOverride atomic.Int64

// passContext returns a context for a pass started now that ends budget
// after now or when parent ends, whichever is later (and at once when
// parent ends after the budget is spent). stop releases it.
func passContext(parent context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	if budget <= 0 {
		return context.WithCancel(parent)
	}
	deadline := time.Now().Add(budget)
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	var timer *time.Timer
	var mu sync.Mutex
	stopAfter := context.AfterFunc(parent, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(time.Until(deadline), cancel)
	})
	return ctx, func() {
		stopAfter()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// trimChunk trims the files directly in directory rel (relative to the
// cache directory) and records the chunk as done in cur. guard vetoes the
// removal of files that may be being written (removeVeto).
func (c *Cache) trimChunk(cur *trimCursor, guard *inuse.Guard, rel string) {
	// The chunk's own directory, opened once: listing it, and looking at
	// and removing xlacache's entries in it, is then one system call per
	// file each, where a path from the top makes os.Root open every
	// directory on the way first (a trim of a big directory is mostly
	// these calls).
	dirRoot, inDir := c.root, rel
	if rel != "." {
		if sub, err := c.root.OpenRoot(rel); err == nil {
			defer sub.Close()
			dirRoot, inDir = sub, "."
		}
	}
	// local names the file frel (relative to the cache directory) in
	// dirRoot.
	local := func(frel string) string {
		if dirRoot == c.root {
			return frel
		}
		return path.Base(frel)
	}
	ents, err := fs.ReadDir(dirRoot.FS(), inDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Debug("trim: listing directory", "dir", rel, "err", err)
	}
	type file struct {
		rel    string
		size   int64
		mtime  time.Time
		bucket int
		class  layout.Class
		info   fs.FileInfo
	}
	var files []file
	var chunkHist [ageBuckets]int64
	for _, d := range ents {
		if d.IsDir() || !d.Type().IsRegular() {
			continue // subdirectories are chunks of their own; links and FIFOs are damage Verify reports
		}
		frel := d.Name()
		if rel != "." {
			frel = rel + "/" + d.Name()
		}
		class := layout.Classify(frel)
		if class.Kind != layout.Temp && !class.Counted() {
			continue
		}
		info, err := d.Info()
		if err != nil {
			continue // vanished
		}
		if class.Kind == layout.Temp {
			// Stale temporaries (left by writers killed mid-write) go;
			// young ones belong to writes in progress.
			t := fileInfo{rel: frel, info: info, class: class, stale: cur.Started.Sub(info.ModTime()) > staleAfter(frel, class)}
			if removeStaleTemp(guard, c.root, t, false) {
				cur.StaleTemps++
			}
			continue
		}
		f := file{rel: frel, size: info.Size(), mtime: info.ModTime(), bucket: ageBucket(cur.Started.Sub(info.ModTime())), class: class, info: info}
		files = append(files, f)
		chunkHist[f.bucket] += f.size
	}
	for i, n := range chunkHist {
		cur.Hist[i] += n
	}
	listed := make([]string, len(files))
	for i, f := range files {
		listed[i] = f.rel
	}
	cur.Scanned -= c.trimPuts.counted(listed)
	est := make([]int64, ageBuckets)
	for i := range est {
		est[i] = cur.Hist[i] + cur.Seed[i]
	}
	cut, share := ageCutoff(est, cur.Fraction)
	// Oldest first, so that the share of the cutoff bucket taken is its
	// least recently used part.
	sort.Slice(files, func(i, j int) bool { return files[i].mtime.Before(files[j].mtime) })
	var removed int
	var removedBytes, inCut int64
	quota := int64(math.Ceil(share * float64(chunkHist[max(cut, 0)])))
	for _, f := range files {
		evict := cut >= 0 && (f.bucket > cut || (f.bucket == cut && inCut < quota))
		own := !layout.XLAOwned(f.rel, f.class)
		if evict {
			var reason string
			if own {
				// removeVeto's re-check of an entry, in dirRoot.
				if st, err := dirRoot.Lstat(local(f.rel)); err == nil {
					reason = inuse.Changed(f.info, st)
				}
			} else {
				reason = removeVeto(guard, c.root, f.rel, f.class, f.info)
			}
			if reason != "" {
				c.logger.Debug("trim: keeping file", "path", f.rel, "reason", reason)
				evict = false
			}
		}
		if evict {
			rm := func() error { return c.root.Remove(f.rel) }
			if own {
				rm = func() error { return dirRoot.Remove(local(f.rel)) }
			}
			if err := rm(); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					c.logger.Debug("trim: removing file", "path", f.rel, "err", err)
					evict = false
				}
			}
		}
		if evict {
			if f.bucket == cut {
				inCut += f.size
			}
			removed++
			removedBytes += f.size
			continue
		}
		cur.Files++
		cur.Scanned += f.size
	}
	if removedBytes > 0 && c.ledger != nil {
		if _, err := c.ledger.add(-removedBytes); err != nil {
			c.logger.Debug("trim: updating the size ledger", "err", err)
		}
	}
	cur.Removed += removed
	cur.RemovedBytes += removedBytes
	cur.Chunks++
	cur.Done = rel
}

// seedShards is how many shards of the executables tier seedAges samples.
const seedShards = 8

// seedAges fills cur.Seed with the ages of the files in a few shards of the
// executables tier, spread over the key space: keys spread entries
// uniformly over the shards, so a few shards give the directory's age
// distribution at the cost of listing a few percent of it.
func (c *Cache) seedAges(cur *trimCursor) {
	ents, err := fs.ReadDir(c.root.FS(), ExecutablesTier)
	if err != nil {
		return
	}
	var shards []string
	for _, d := range ents {
		if d.IsDir() {
			shards = append(shards, d.Name())
		}
	}
	if len(shards) == 0 {
		return
	}
	step := max(len(shards)/seedShards, 1)
	for i := step / 2; i < len(shards); i += step {
		files, err := fs.ReadDir(c.root.FS(), ExecutablesTier+"/"+shards[i])
		if err != nil {
			continue
		}
		for _, d := range files {
			if !d.Type().IsRegular() || layout.Classify(ExecutablesTier+"/"+shards[i]+"/"+d.Name()).Kind != layout.Entry {
				continue
			}
			if info, err := d.Info(); err == nil {
				cur.Seed[ageBucket(cur.Started.Sub(info.ModTime()))] += info.Size()
			}
		}
	}
}

// ageBucket returns the histogram bucket of age d.
func ageBucket(d time.Duration) int {
	s := max(d.Seconds(), 0)
	b := int(ageBucketsPerOctave * math.Log2(1+s))
	return min(max(b, 0), ageBuckets-1)
}

// ageCutoff returns the bucket at which the oldest fraction of the bytes
// in hist ends, and the share of that bucket's bytes to remove (files in
// older buckets all go). cut is -1 when nothing is to be removed.
func ageCutoff(hist []int64, fraction float64) (cut int, share float64) {
	var total int64
	for _, n := range hist {
		total += n
	}
	want := fraction * float64(total)
	if fraction <= 0 || want <= 0 {
		return -1, 0
	}
	var older float64
	for i := len(hist) - 1; i >= 0; i-- {
		n := float64(hist[i])
		if n == 0 {
			continue
		}
		if older+n >= want {
			return i, (want - older) / n
		}
		older += n
	}
	return 0, 1
}

// walkChunks calls fn for every directory of the cache that may hold
// counted files (the owned top-level directories and everything under
// them, and the top itself), in post-order (a directory after everything
// under it, siblings by name), skipping those at or before done in that
// order. The walk goes through c.root and never descends into a symbolic
// link.
func (c *Cache) walkChunks(ctx context.Context, done string, fn func(rel string) error) error {
	var visit func(rel string) error
	visit = func(rel string) error {
		if done != "" && !postOrderAfter(rel, done) {
			return nil // this subtree was done by an earlier run
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := fs.ReadDir(c.root.FS(), rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			if rel == "." {
				return fmt.Errorf("listing %s: %w", c.dir, err)
			}
			// An unreadable directory is skipped, not retried by every
			// pass forever: the pass goes on with the others.
			c.failure("", "listing a directory", layout.Dir(c.dir).Join(rel), err)
			return nil
		}
		for _, d := range ents {
			if !d.IsDir() {
				continue
			}
			sub := d.Name()
			if rel != "." {
				sub = rel + "/" + d.Name()
			} else if !layout.OwnedTopDir(sub, layout.Dir(c.dir).Join(sub)) {
				continue
			}
			if err := visit(sub); err != nil {
				return err
			}
		}
		return fn(rel)
	}
	return visit(".")
}

// postOrderAfter reports whether directory a comes after directory b in
// walkChunks' order (post-order, children by name): a directory comes
// after everything under it. "." is the top.
func postOrderAfter(a, b string) bool {
	if a == b {
		return false
	}
	ac, bc := splitRel(a), splitRel(b)
	for i := 0; ; i++ {
		switch {
		case i == len(ac):
			return true // a is an ancestor of b
		case i == len(bc):
			return false // b is an ancestor of a
		case ac[i] != bc[i]:
			return ac[i] > bc[i]
		}
	}
}

func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// trimPutLog remembers the files this process writes while it runs a trim
// pass. A pass counts a directory's bytes when it reaches it and adds what
// the ledger gained meanwhile; a file written before its directory was
// reached is in both, and this log lets the pass count this process's
// such files once. (Other processes' puts can still be counted twice
// until the next pass: the ledger is approximate between passes.)
type trimPutLog struct {
	mu     sync.Mutex
	active bool
	puts   map[string]int64
}

// start begins logging puts for a pass.
func (l *trimPutLog) start() {
	l.mu.Lock()
	l.active, l.puts = true, map[string]int64{}
	l.mu.Unlock()
}

// stop ends the logging.
func (l *trimPutLog) stop() {
	l.mu.Lock()
	l.active, l.puts = false, nil
	l.mu.Unlock()
}

// note records a put of n bytes at rel during a pass.
func (l *trimPutLog) note(rel string, n int64) {
	l.mu.Lock()
	if l.active {
		l.puts[rel] += n
	}
	l.mu.Unlock()
}

// counted returns how many of the bytes this process put during the pass
// are in the files named (listed by the pass), and forgets them.
func (l *trimPutLog) counted(rels []string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, r := range rels {
		if v, ok := l.puts[r]; ok {
			n += v
			delete(l.puts, r)
		}
	}
	return n
}
