package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/archive"
	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/stablehlo"
)

// warmCmd is `xlacache warm`: compile many programs through the cache
// before a job needs them.
var warmCmd = &cobra.Command{
	Use:   "warm PROGRAMS...",
	Short: "Compile StableHLO programs through the cache before a job needs them",
	Long: `Compile every program named (.mlir files, or directories searched recursively
for .mlir files) with the cpu backend through the cache, as run does, with
at most --jobs compiles at once. A progress bar shows on a terminal. Then
print, per program, whether it was already cached (hit) or compiled now,
how long that took and whether the result was stored, and the totals.

With --export FILE, then pack the cache directory into FILE as export
does: the bundle a CI job ships next to a container image (import it when
the image is built or starts).

A program that cannot be read, parsed or compiled is reported with its
file name and the others are still compiled; the exit status is then 1
(after --export, which still packs what was stored). With --json, print
one JSON object.`,
	Args: usageArgs(cobra.MinimumNArgs(1)),
	RunE: runWarm,
}

func init() {
	f := warmCmd.Flags()
	f.Int("jobs", runtime.GOMAXPROCS(0), "programs compiled at once")
	f.String("export", "", "after warming, pack the cache into this archive (as export does)")
	rootCmd.AddCommand(warmCmd)
}

// warmResult is one program's line in the report.
type warmResult struct {
	Path   string `json:"path"`
	Module string `json:"module,omitempty"`
	Key    string `json:"key,omitempty"`
	// Hit is true when the executable was already cached; Source says
	// where it came from ("local" or "shared").
	Hit    bool   `json:"hit"`
	Source string `json:"source,omitempty"`
	// Stored is true when the compile's result was written to the cache.
	Stored bool `json:"stored"`
	// Time is the wall time of the program's compile (or load) through
	// the cache; CompileTime the backend compile alone.
	Time        time.Duration `json:"time_ns"`
	CompileTime time.Duration `json:"compile_time_ns"`
	Err         string        `json:"error,omitempty"`
}

// warmReport is the whole report (the --json form).
type warmReport struct {
	Dir      string       `json:"dir"`
	Writer   bool         `json:"writer"`
	Programs []warmResult `json:"programs"`
	Hits     int          `json:"hits"`
	Compiled int          `json:"compiled"`
	Stored   int          `json:"stored"`
	Failed   int          `json:"failed"`
	// CompileTime sums the backend compiles; Wall is the whole warm.
	CompileTime time.Duration `json:"compile_time_ns"`
	Wall        time.Duration `json:"wall_ns"`
	// Export is the --export archive, if any.
	Export *warmExport `json:"export,omitempty"`
}

// warmExport describes the --export archive.
type warmExport struct {
	Path    string `json:"path"`
	Files   int64  `json:"files"`
	Bytes   int64  `json:"bytes"`
	Skipped int64  `json:"skipped"`
}

func runWarm(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	jobs, _ := cmd.Flags().GetInt("jobs")
	exportPath, _ := cmd.Flags().GetString("export")
	if jobs < 1 {
		return usagef("--jobs %d: want at least 1", jobs)
	}
	if exportPath == "-" {
		return usagef("--export -: name a file (the report goes to standard output)")
	}
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	paths, results := findPrograms(args)
	if len(paths) == 0 && len(results) == 0 {
		return fmt.Errorf("no .mlir programs in %s", strings.Join(args, ", "))
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	start := time.Now()
	c, err := xlacache.Open(ctx, opts, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	if !c.Writer() {
		fmt.Fprintf(cmd.ErrOrStderr(), "xlacache: this process is a reader (%s): programs are compiled but nothing is stored\n", roleReason(c))
	}

	bar := newWarmBar(cmd, len(paths))
	b := cpu.New()
	compile := func(p string) warmResult { return warmOne(ctx, c, b, p) }
	results = append(results, warmAll(ctx, paths, jobs, compile, bar.done)...)
	bar.finish()
	rep := warmReport{Dir: c.Dir(), Writer: c.Writer(), Programs: results}
	slices.SortFunc(rep.Programs, func(a, b warmResult) int { return strings.Compare(a.Path, b.Path) })
	for _, r := range rep.Programs {
		switch {
		case r.Err != "":
			rep.Failed++
		case r.Hit:
			rep.Hits++
		default:
			rep.Compiled++
		}
		if r.Stored {
			rep.Stored++
		}
		rep.CompileTime += r.CompileTime
	}
	// Closed before the export: stats and background work are done, and
	// the archive sees every entry.
	if err := c.Close(); err != nil {
		logger.Warn("closing the cache", "err", err)
	}
	rep.Wall = time.Since(start)

	var exportErr error
	if exportPath != "" {
		rep.Export, exportErr = warmExportTo(cmd, exportPath)
	}
	out := cmd.OutOrStdout()
	if jsonOutput(cmd) {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else if err := writeWarmText(out, rep); err != nil {
		return err
	}
	if exportErr != nil {
		return exportErr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rep.Failed > 0 {
		return fmt.Errorf("%d of %d programs failed", rep.Failed, len(rep.Programs))
	}
	return nil
}

// roleReason says why the cache is read-only, for the warning.
func roleReason(c *cache.Cache) string {
	if c.Dir() == "" {
		return "no usable cache directory"
	}
	return "XLACACHE_ROLE or the process index"
}

// findPrograms expands args into .mlir files: a file is taken as named
// (whatever its extension), a directory is searched recursively for
// *.mlir (symbolic links to directories are not followed). Paths that
// cannot be read become failed results naming them.
func findPrograms(args []string) ([]string, []warmResult) {
	var paths []string
	var failed []warmResult
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			failed = append(failed, warmResult{Path: a, Err: err.Error()})
			continue
		}
		if !st.IsDir() {
			paths = append(paths, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				failed = append(failed, warmResult{Path: p, Err: err.Error()})
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".mlir") {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			failed = append(failed, warmResult{Path: a, Err: err.Error()})
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths), failed
}

// warmAll runs compile on every path, at most jobs at once, calling done
// after each; it stops handing out paths when ctx is done. Results are in
// no particular order.
func warmAll(ctx context.Context, paths []string, jobs int, compile func(path string) warmResult, done func()) []warmResult {
	work := make(chan string)
	res := make(chan warmResult)
	var wg sync.WaitGroup
	for range min(jobs, max(len(paths), 1)) {
		wg.Go(func() {
			for p := range work {
				res <- compile(p)
			}
		})
	}
	go func() {
		defer close(work)
		for _, p := range paths {
			if ctx.Err() != nil {
				return
			}
			select {
			case work <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(res)
	}()
	var out []warmResult
	for r := range res {
		out = append(out, r)
		done()
	}
	return out
}

// warmOne compiles the program at path through c.
func warmOne(ctx context.Context, c *cache.Cache, b cache.Backend, path string) warmResult {
	r := warmResult{Path: path}
	fail := func(err error) warmResult {
		r.Err = err.Error()
		return r
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return fail(fmt.Errorf("reading program: %w", err))
	}
	m, err := stablehlo.Parse(src, path) // Parse verifies
	if err != nil {
		return fail(err)
	}
	if m.Main() == nil {
		return fail(fmt.Errorf("%s: no main function", path))
	}
	r.Module = programModuleName(m, path)
	start := time.Now()
	exe, rep, err := cache.Compile(ctx, c, b, cache.Program{Name: r.Module, Text: src})
	r.Time = time.Since(start)
	if rep != nil {
		r.Key, r.Hit, r.Source, r.Stored, r.CompileTime = rep.Key, rep.Hit, rep.Source, rep.Stored, rep.CompileTime
	}
	if err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	if cl, ok := exe.(io.Closer); ok {
		cl.Close() // warming keeps nothing loaded
	}
	return r
}

// warmExportTo packs the cache directory into path, as `export` does.
func warmExportTo(cmd *cobra.Command, path string) (*warmExport, error) {
	opts, err := loadExistingDir(cmd)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", path, err)
	}
	var st archive.ExportStats
	err = atomicfile.ReplaceFrom(path, func(w io.Writer) (err error) {
		st, err = archive.Export(cmd.Context(), opts.Dir, w, archiveOptions(opts))
		return err
	}, atomicfile.Options{})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", path, err)
	}
	return &warmExport{Path: path, Files: int64(st.Files), Bytes: st.Bytes, Skipped: int64(st.Skipped)}, nil
}

func writeWarmText(w io.Writer, r warmReport) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tRESULT\tTIME\tSTORED")
	for _, p := range r.Programs {
		switch {
		case p.Err != "":
			fmt.Fprintf(tw, "%s\tfailed\t-\t-\n", p.Path)
		case p.Hit:
			fmt.Fprintf(tw, "%s\thit (%s)\t%s\t-\n", p.Path, p.Source, fmtDur(p.Time))
		default:
			stored := "no"
			if p.Stored {
				stored = "yes"
			}
			fmt.Fprintf(tw, "%s\tcompiled\t%s\t%s\n", p.Path, fmtDur(p.Time), stored)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Programs {
		switch {
		case p.Err == "":
		case strings.HasPrefix(p.Err, p.Path):
			fmt.Fprintf(w, "error: %s\n", p.Err) // it names the file already
		default:
			fmt.Fprintf(w, "error: %s: %s\n", p.Path, p.Err)
		}
	}
	dir := r.Dir
	if dir == "" {
		dir = "(no usable cache directory)"
	}
	fmt.Fprintf(w, "\n%d programs: %d already cached, %d compiled (%d stored), %d failed; compile time %s, wall %s; cache %s\n",
		len(r.Programs), r.Hits, r.Compiled, r.Stored, r.Failed, fmtDur(r.CompileTime), fmtDur(r.Wall), dir)
	if e := r.Export; e != nil {
		fmt.Fprintf(w, "exported %d files (%s) to %s; %d damaged entries left out\n", e.Files, fmtBytes(e.Bytes), e.Path, e.Skipped)
	}
	return nil
}

// warmBar is the progress bar of warm: shown only when both standard
// output and standard error are terminals.
type warmBar struct {
	mu   sync.Mutex
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

func newWarmBar(cmd *cobra.Command, total int) *warmBar {
	wb := &warmBar{}
	if total == 0 || !isTerminal(cmd.OutOrStdout()) || !isTerminal(cmd.ErrOrStderr()) {
		return wb
	}
	wb.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionSetDescription("warming"),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish(), progressbar.OptionSetElapsedTime(true))
	wb.bar.RenderBlank()
	// A big program compiles for minutes: redraw every second so that the
	// elapsed time shows the bar is alive.
	wb.stop = make(chan struct{})
	wb.wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-wb.stop:
				return
			case <-t.C:
				wb.mu.Lock()
				wb.bar.Add(0)
				wb.mu.Unlock()
			}
		}
	})
	return wb
}

func (wb *warmBar) done() {
	if wb.bar == nil {
		return
	}
	wb.mu.Lock()
	wb.bar.Add(1)
	wb.mu.Unlock()
}

func (wb *warmBar) finish() {
	if wb.bar == nil {
		return
	}
	close(wb.stop)
	wb.wg.Wait()
	wb.bar.Finish()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
