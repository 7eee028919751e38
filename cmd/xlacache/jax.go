package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// JAX cache directories in the CLI. `xlacache env` points
// JAX_COMPILATION_CACHE_DIR at the xlacache directory, so a directory
// commonly holds both xlacache's tiers and JAX's "<module>-<hash>-cache"
// entries. stats, ls, verify, explain and prune then report and act on
// both; a directory holding only JAX entries (no xlacache state) gets the
// JAX part alone. XLA's subcaches are counted once, as xlacache's.

// inspectDir loads the options of an admin command, checks the directory
// exists and tells whose entries it holds.
func inspectDir(cmd *cobra.Command) (config.Options, shareddir.Contents, error) {
	opts, err := loadExistingDir(cmd)
	if err != nil {
		return opts, shareddir.Contents{}, err
	}
	lay, err := shareddir.Inspect(cmd.Context(), opts.Dir)
	return opts, lay, err
}

// jaxOnly reports on a directory that holds JAX entries and nothing of
// xlacache's, with text; such a report has no --json form.
func jaxOnly(cmd *cobra.Command, dir string, text func(ctx context.Context, w io.Writer, dir string) error) error {
	if jsonOutput(cmd) {
		return cli.Usagef("--json is not supported for a JAX-only cache directory (%s)", dir)
	}
	return text(cmd.Context(), cmd.OutOrStdout(), dir)
}

func jaxStats(ctx context.Context, w io.Writer, dir string) error {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	if err := writeJAXStats(w, d); err != nil {
		return err
	}
	return writeJAXRuntimeLoads(w, d, jaxLoadsByRuntime(ctx, dir, d))
}

func jaxLs(ctx context.Context, w io.Writer, dir string) error {
	ls, err := shareddir.ListJAX(ctx, dir)
	if err != nil {
		return err
	}
	return writeJAXList(w, ls)
}

// jaxVerify checks the JAX entries and XLA subcache files in dir, writes
// the text report to w (nil: none) and returns the JSON form and the
// number of damaged files that are not possibly in flight.
func jaxVerify(ctx context.Context, w io.Writer, dir string) (shareddir.JAXVerifyReport, int, error) {
	d, r, rep, bad, err := shareddir.VerifyJAX(ctx, dir)
	if err != nil || w == nil {
		return rep, bad, err
	}
	_, err = writeJAXVerify(w, d, r)
	return rep, bad, err
}

// jaxPrune bounds the JAX part of dir: maxSize bytes including otherBytes
// of xlacache's own that share the directory.
func jaxPrune(ctx context.Context, w io.Writer, dir string, po jaxcache.PruneOptions) (jaxcache.PruneResult, error) {
	r, err := jaxcache.Prune(ctx, dir, po)
	if err != nil {
		return r, err
	}
	return r, writeJAXPrune(w, dir, r, po.DryRun)
}

// jaxExplain explains query (a JAX key or module name) against the JAX
// entries in dir; it writes the text form to w (nil: none).
func jaxExplain(ctx context.Context, w io.Writer, dir, query string) (shareddir.JAXExplainReport, error) {
	ex, rep, err := shareddir.ExplainJAX(ctx, dir, query)
	if err != nil || w == nil {
		return rep, err
	}
	return rep, writeJAXExplain(w, ex)
}

// pruneShared enforces one bound on a directory holding both xlacache's
// tiers and JAX entries (shareddir.Prune) and reports both parts.
func pruneShared(ctx context.Context, w io.Writer, c *cache.Cache, dir string, maxSize int64, dryRun bool) error {
	r, err := shareddir.Prune(ctx, c, dir, maxSize, dryRun, nil)
	if err != nil {
		return err
	}
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	fmt.Fprintf(w, "xlacache: %d files, %s (XLA subcaches and quarantine included); %s %d files (%s) and %d stale temporary files; %s left\n",
		r.Own.Files, fmtBytes(r.OwnBefore), verb, r.Own.Removed, fmtBytes(r.Own.RemovedBytes), r.Own.StaleTemps, fmtBytes(r.OwnLeft))
	fmt.Fprintln(w, "JAX entries:")
	if err := writeJAXPrune(w, dir, r.JAX, dryRun); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s -> %s (max %s), least recently used first across xlacache and JAX\n",
		dir, fmtBytes(r.Before()), fmtBytes(r.After()), fmtBytes(maxSize))
	if r.After() > maxSize {
		fmt.Fprintf(w, "still over the bound: the files left could not be removed (being written, modified in the last %v, or removal failed; see above and the log)\n", jaxcache.DefaultGrace)
	}
	return nil
}
