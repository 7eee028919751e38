package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/jaxcache"
)

// JAX cache directories in the CLI. `xlacache env` points
// JAX_COMPILATION_CACHE_DIR at the xlacache directory, so a directory
// commonly holds both xlacache's tiers and JAX's "<module>-<hash>-cache"
// entries. stats, ls, verify, explain and prune then report and act on
// both; a directory holding only JAX entries (no xlacache state) gets the
// JAX part alone. XLA's subcaches are counted once, as xlacache's.

// jaxTier is the tier name JAX entries carry in `ls --json`; it cannot
// clash with an xlacache tier, whose names are "executables" or
// "<backend>/<subcache>".
const jaxTier = "jax"

// dirLayout says whose caches a directory holds.
type dirLayout struct {
	// own: xlacache's tiers or state; jax: at least one JAX entry.
	own, jax bool
}

// inspectDir loads the options of an admin command, checks the directory
// exists and tells whose entries it holds.
func inspectDir(cmd *cobra.Command) (config.Options, dirLayout, error) {
	opts, err := loadOptions(cmd)
	if err != nil {
		return opts, dirLayout{}, err
	}
	if err := existingDir(opts.Dir); err != nil {
		return opts, dirLayout{}, err
	}
	lay, err := layoutOf(cmd.Context(), opts.Dir)
	return opts, lay, err
}

// layoutOf inspects dir. A directory with neither is xlacache's (empty).
func layoutOf(ctx context.Context, dir string) (dirLayout, error) {
	jax, err := jaxcache.IsJAXDir(dir)
	if err != nil {
		return dirLayout{}, fmt.Errorf("cache directory: %w", err)
	}
	if !jax {
		return dirLayout{own: true}, nil
	}
	own, err := hasOwnState(ctx, dir)
	return dirLayout{own: own, jax: true}, err
}

// hasOwnState reports whether xlacache has used dir: its state,
// executables or quarantine directory, or a backend tier. XLA's subcaches
// alone do not count, since JAX puts them there too.
func hasOwnState(ctx context.Context, dir string) (bool, error) {
	for _, n := range []string{cache.StateDir, cache.ExecutablesDir, cache.QuarantineDir} {
		if st, err := os.Lstat(filepath.Join(dir, n)); err == nil && st.IsDir() {
			return true, nil
		}
	}
	u, err := cache.Scan(ctx, dir)
	if err != nil {
		return false, err
	}
	for area := range u.Areas {
		if isBackendArea(area) {
			return true, nil
		}
	}
	return false, nil
}

// jaxOwnBytes are the bytes of a JAX directory that are not XLA subcache
// files: entries, their atime files and orphaned atime files.
func jaxOwnBytes(s jaxcache.Stats) int64 {
	n := s.TotalBytes
	for _, ss := range s.Subcaches {
		n -= ss.Bytes
	}
	return n
}

func jaxStats(ctx context.Context, w io.Writer, dir string) error {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	return jaxcache.WriteStats(w, d)
}

func jaxLs(ctx context.Context, w io.Writer, dir string) error {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	ls, err := jaxcache.List(ctx, d)
	if err != nil {
		return err
	}
	return jaxcache.WriteList(w, ls)
}

// jaxEntryInfos converts JAX listings to `ls --json` rows (tier "jax").
func jaxEntryInfos(ls []jaxcache.Listing) []cache.EntryInfo {
	out := make([]cache.EntryInfo, 0, len(ls))
	for _, l := range ls {
		ei := cache.EntryInfo{Tier: jaxTier, Key: l.Key, Path: l.Path, Size: l.Size, LastUsed: l.LastUse, CompileTime: l.Header.CompileTime, Codec: string(l.Header.Codec)}
		if l.Err != nil {
			ei.Err = l.Err.Error()
		}
		out = append(out, ei)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// jaxVerifyReport is the JAX part of `verify --json`.
type jaxVerifyReport struct {
	Checked int
	// Bad are damaged files; MaybeInFlight ones were modified recently
	// and may still be being written, so they do not fail the command.
	Bad []jaxProblem
}

type jaxProblem struct {
	Path, Err     string
	MaybeInFlight bool
}

// jaxVerify checks the JAX entries and XLA subcache files in dir, writes
// the text report to w (nil: none) and returns the JSON form and the
// number of damaged files that are not possibly in flight (a recent one
// may still be being written by JAX).
func jaxVerify(ctx context.Context, w io.Writer, dir string) (jaxVerifyReport, int, error) {
	var rep jaxVerifyReport
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return rep, 0, err
	}
	r, err := jaxcache.Verify(ctx, d, jaxcache.VerifyOptions{})
	if err != nil {
		return rep, 0, err
	}
	rep.Checked, rep.Bad = r.Checked, []jaxProblem{}
	bad := 0
	for _, p := range r.Problems {
		rep.Bad = append(rep.Bad, jaxProblem{Path: p.Path, Err: p.Err.Error(), MaybeInFlight: p.MaybeInFlight})
		if !p.MaybeInFlight {
			bad++
		}
	}
	if w != nil {
		if _, err := jaxcache.WriteVerify(w, d, r); err != nil {
			return rep, bad, err
		}
	}
	return rep, bad, nil
}

// jaxPrune bounds the JAX part of dir: maxSize bytes including otherBytes
// of xlacache's own that share the directory.
func jaxPrune(ctx context.Context, w io.Writer, dir string, po jaxcache.PruneOptions) (jaxcache.PruneResult, error) {
	r, err := jaxcache.Prune(ctx, dir, po)
	if err != nil {
		return r, err
	}
	return r, jaxcache.WritePrune(w, dir, r, po.DryRun)
}

// jaxExplainReport is the JAX part of `explain --json`.
type jaxExplainReport struct {
	Query string
	// Found is true when an entry with exactly the queried key is stored.
	Found bool
	// SameModule are the keys of the module's other entries.
	SameModule []string
	Lines      []string
}

// jaxExplain explains query (a JAX key or module name) against the JAX
// entries in dir; it writes the text form to w (nil: none).
func jaxExplain(ctx context.Context, w io.Writer, dir, query string) (jaxExplainReport, error) {
	rep := jaxExplainReport{Query: query, SameModule: []string{}}
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return rep, err
	}
	ex, err := jaxcache.Explain(ctx, d, query)
	if err != nil {
		return rep, err
	}
	rep.Found, rep.Lines = ex.Found != nil && ex.Found.Err == nil, ex.Lines
	for _, e := range ex.SameModule {
		rep.SameModule = append(rep.SameModule, e.Key)
	}
	if w != nil {
		return rep, jaxcache.WriteExplain(w, ex)
	}
	return rep, nil
}

// pruneFile is one file in the global least-recently-used order of a
// directory shared by xlacache and JAX.
type pruneFile struct {
	own     bool // xlacache's (tiers, XLA subcaches, quarantine); else a JAX entry
	size    int64
	lastUse time.Time
}

// ownPruneFiles lists the files of xlacache's part of a shared directory
// in the order its prune counts them (tiers, XLA's subcaches, quarantine).
func ownPruneFiles(ctx context.Context, dir string) ([]pruneFile, error) {
	files, err := cache.Files(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]pruneFile, len(files))
	for i, f := range files {
		out[i] = pruneFile{own: true, size: f.Size, lastUse: f.ModTime}
	}
	return out, nil
}

// planOwnTarget returns the bytes xlacache's part of a shared directory
// may keep so that evicting least recently used files across both parts
// brings the total to maxSize: it walks all files oldest first, as one
// LRU would, and sums the xlacache ones it passes. ownTotal is xlacache's
// total as its prune counts it; JAX's orphaned atime files are garbage
// that JAX's prune removes anyway, so they do not take a place in the
// order.
func planOwnTarget(ownTotal int64, own []pruneFile, jd *jaxcache.Dir, maxSize int64) int64 {
	files := append([]pruneFile(nil), own...)
	total := ownTotal
	for _, e := range jd.Entries {
		files = append(files, pruneFile{size: e.Size + e.AtimeSize, lastUse: e.LastUse})
		total += e.Size + e.AtimeSize
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].lastUse.Before(files[j].lastUse) })
	var evict int64
	for _, f := range files {
		if total <= maxSize {
			break
		}
		total -= f.size
		if f.own {
			evict += f.size
		}
	}
	return ownTotal - evict
}

// pruneShared enforces one bound on a directory holding both xlacache's
// tiers and JAX entries, evicting least recently used files first across
// both (xlacache files by modification time, which its hits refresh; JAX
// entries by their atime files): first xlacache's share of the plan
// through c.Prune, then JAX's through jaxcache.Prune with xlacache's
// actual remaining bytes counted against the bound, then xlacache again if
// JAX kept files it could not remove (being written, or in the grace
// period) and xlacache still has some.
func pruneShared(ctx context.Context, w io.Writer, c *cache.Cache, dir string, maxSize int64, dryRun bool, logger *slog.Logger) error {
	jd, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	u, err := cache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	own, err := ownPruneFiles(ctx, dir)
	if err != nil {
		return err
	}
	// c.Prune treats a bound <= 0 as "no bound": 1 byte evicts every
	// non-empty file.
	target := max(planOwnTarget(u.Bytes, own, jd, maxSize), 1)
	xres, err := c.Prune(ctx, target, dryRun)
	if err != nil {
		return err
	}
	ownBefore := xres.Bytes
	ownLeft := xres.Bytes - xres.RemovedBytes
	jres, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{MaxSize: maxSize, OtherBytes: ownLeft, SkipSubcaches: true, DryRun: dryRun, Logger: logger})
	if err != nil {
		return err
	}
	if ownLeft+jres.After > maxSize && ownLeft > 0 {
		more, err := c.Prune(ctx, max(maxSize-jres.After, 1), dryRun)
		if err != nil {
			return err
		}
		if dryRun {
			// A dry run removed nothing: the second plan counts from the
			// same files and includes the first.
			xres = more
		} else {
			xres.Removed += more.Removed
			xres.RemovedBytes += more.RemovedBytes
			xres.StaleTemps += more.StaleTemps
		}
		ownLeft = ownBefore - xres.RemovedBytes
	}
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	fmt.Fprintf(w, "xlacache: %d files, %s (XLA subcaches and quarantine included); %s %d files (%s) and %d stale temporary files; %s left\n",
		xres.Files, fmtBytes(ownBefore), verb, xres.Removed, fmtBytes(xres.RemovedBytes), xres.StaleTemps, fmtBytes(ownLeft))
	fmt.Fprintln(w, "JAX entries:")
	if err := jaxcache.WritePrune(w, dir, jres, dryRun); err != nil {
		return err
	}
	total := ownLeft + jres.After
	fmt.Fprintf(w, "%s: %s -> %s (max %s), least recently used first across xlacache and JAX\n",
		dir, fmtBytes(ownBefore+jres.Before), fmtBytes(total), fmtBytes(maxSize))
	if total > maxSize {
		fmt.Fprintf(w, "still over the bound: the files left could not be removed (being written, modified in the last %v, or removal failed; see above and the log)\n", jaxcache.DefaultGrace)
	}
	return nil
}
