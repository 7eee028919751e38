package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/archive"
	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/progress"
	"github.com/xlacache/xlacache/warm"
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
one JSON object.

With XLACACHE_REQUIRE_HIT=fail, warm checks a golden cache instead of
filling it: a program the cache cannot serve is not compiled but reported
as missed, with why (no entry, which key component differs from the
nearest entry, an entry that failed verification, ...), and the exit
status is 3 when every other program was a hit. With warn, each compile
the cache could not spare is logged and warm goes on.`,
	Args: cli.UsageArgs(cobra.MinimumNArgs(1)),
	RunE: runWarm,
}

func init() {
	f := warmCmd.Flags()
	f.Int("jobs", runtime.GOMAXPROCS(0), "programs compiled at once")
	f.String("export", "", "after warming, pack the cache into this archive (as export does)")
	rootCmd.AddCommand(warmCmd)
}

func runWarm(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	jobs, _ := cmd.Flags().GetInt("jobs")
	exportPath, _ := cmd.Flags().GetString("export")
	if jobs < 1 {
		return cli.Usagef("--jobs %d: want at least 1", jobs)
	}
	if exportPath == "-" {
		return cli.Usagef("--export -: name a file (the report goes to standard output)")
	}
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	paths, results := warm.Find(args)
	if len(paths) == 0 && len(results) == 0 {
		return fmt.Errorf("no .mlir programs in %s", strings.Join(args, ", "))
	}
	logger := slog.Default() // -v: info
	start := time.Now()
	c, err := xlacache.Open(ctx, opts, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	if !c.Writer() {
		fmt.Fprintf(cmd.ErrOrStderr(), "xlacache: this process is a reader (%s): programs are compiled but nothing is stored\n", roleReason(c))
	}

	// The bar shows only when both standard output and standard error are
	// terminals.
	bar := progress.NewCounter(cmd.ErrOrStderr(), "warming", len(paths), progress.IsTerminal(cmd.OutOrStdout()) && progress.IsTerminal(cmd.ErrOrStderr()))
	b := cpu.New()
	compile := func(p string) warm.Result { return warm.One(ctx, c, b, p) }
	results = append(results, warm.All(ctx, paths, jobs, compile, bar.Done)...)
	bar.Finish()
	if ctx.Err() != nil {
		// Interrupted: what was compiled is stored, and the next warm
		// resumes from there; a table of "failed: context canceled" rows
		// would read as a crash (main prints the one line).
		return ctx.Err()
	}
	rep := warm.NewReport(c.Dir(), c.Writer(), results)
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
	switch {
	case rep.Failed > 0 && rep.Missed > 0:
		return fmt.Errorf("%d of %d programs failed, and %d missed the cache (%s=fail)", rep.Failed, len(rep.Programs), rep.Missed, config.EnvRequireHit)
	case rep.Failed > 0:
		return fmt.Errorf("%d of %d programs failed", rep.Failed, len(rep.Programs))
	case rep.Missed > 0:
		// Exit status cli.ExitMiss: the golden cache is incomplete, every
		// program is otherwise fine.
		return fmt.Errorf("%d of %d programs missed the cache: %w", rep.Missed, len(rep.Programs), cache.ErrHitRequired)
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

// warmExportTo packs the cache directory into path, as `export` does.
func warmExportTo(cmd *cobra.Command, path string) (*warm.Export, error) {
	opts, err := loadExistingDir(cmd)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", path, err)
	}
	st, err := archive.ExportFile(cmd.Context(), opts.Dir, path, archive.OptionsFor(opts))
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", path, err)
	}
	return &warm.Export{Path: path, Files: int64(st.Files), Bytes: st.Bytes, Skipped: int64(st.Skipped)}, nil
}

func writeWarmText(w io.Writer, r warm.Report) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tRESULT\tTIME\tSTORED")
	for _, p := range r.Programs {
		switch {
		case p.Missed:
			fmt.Fprintf(tw, "%s\tmissed\t-\t-\n", p.Path)
		case p.Err != "":
			fmt.Fprintf(tw, "%s\tfailed\t-\t-\n", p.Path)
		case p.Hit:
			fmt.Fprintf(tw, "%s\thit (%s)\t%s\t-\n", p.Path, p.Source, cli.FormatDuration(p.Time))
		default:
			stored := "no"
			if p.Stored {
				stored = "yes"
			}
			fmt.Fprintf(tw, "%s\tcompiled\t%s\t%s\n", p.Path, cli.FormatDuration(p.Time), stored)
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
	missed := ""
	if r.Missed > 0 {
		missed = fmt.Sprintf(", %d missed (%s=fail)", r.Missed, config.EnvRequireHit)
	}
	fmt.Fprintf(w, "\n%d programs: %d already cached, %d compiled (%d stored), %d failed%s; compile time %s, wall %s; cache %s\n",
		len(r.Programs), r.Hits, r.Compiled, r.Stored, r.Failed, missed, cli.FormatDuration(r.CompileTime), cli.FormatDuration(r.Wall), dir)
	if e := r.Export; e != nil {
		fmt.Fprintf(w, "exported %d files (%s) to %s; %d damaged entries left out\n", e.Files, fmtBytes(e.Bytes), e.Path, e.Skipped)
	}
	return nil
}
