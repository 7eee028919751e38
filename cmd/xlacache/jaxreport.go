package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xlacache/xlacache/xla/jaxcache"
)

// The writeJAX* functions print package jaxcache's results for the JAX
// directory commands (jax.go).

// writeJAXStats prints a directory's totals, XLA's subcaches included.
func writeJAXStats(w io.Writer, d *jaxcache.Dir) error {
	s := d.Stats()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "JAX cache\t%s\n", d.Path)
	fmt.Fprintf(tw, "executables\t%d entries\t%s\n", s.Entries, fmtBytes(s.EntryBytes))
	if s.MissingAtime > 0 {
		fmt.Fprintf(tw, "  without atime file\t%d\t(last use taken from the file's mtime)\n", s.MissingAtime)
	}
	if s.OrphanAtimes > 0 {
		fmt.Fprintf(tw, "  orphaned atime files\t%d\t(prune removes them)\n", s.OrphanAtimes)
	}
	names := make([]string, 0, len(s.Subcaches))
	for n := range s.Subcaches {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ss := s.Subcaches[n]
		extra := ""
		if ss.TempFiles > 0 {
			extra = fmt.Sprintf("\t(%d in progress or stale in tmp/)", ss.TempFiles)
		}
		fmt.Fprintf(tw, "%s\t%d files\t%s%s\n", n, ss.Files, fmtBytes(ss.Bytes), extra)
	}
	fmt.Fprintf(tw, "total\t\t%s\t(JAX itself counts only the executables)\n", fmtBytes(s.TotalBytes))
	if d.Ignored > 0 {
		fmt.Fprintf(tw, "not JAX's\t%d other names in the directory\t(left alone)\n", d.Ignored)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, jaxLoadLine(s))
	return err
}

// jaxLoadLine says how many entries JAX never loaded since they were
// written (told by access times, docs/xla.md), or why that is unknown.
func jaxLoadLine(s jaxcache.Stats) string {
	switch {
	case s.AtimeMode == jaxcache.AtimeNever:
		return fmt.Sprintf("JAX: %d entries, loads unknown (filesystem mounted noatime: reads leave no trace)", s.Entries)
	case !s.AtimeMode.Tells():
		return fmt.Sprintf("JAX: %d entries, loads unknown (access times not read on this system)", s.Entries)
	}
	line := fmt.Sprintf("JAX: %d entries, %d never loaded since written", s.Entries, s.NeverLoaded)
	if s.Entries > 0 && s.NeverLoaded == s.Entries {
		line += " (if jobs ran since they were written, JAX is not loading them: xlacache jax explain, docs/xla.md)"
	}
	return line
}

// writeJAXList prints entries, most recently used first.
func writeJAXList(w io.Writer, ls []jaxcache.Listing) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSIZE\tCODEC\tCOMPILE\tLAST USE")
	for _, l := range ls {
		codec, compile := string(l.Header.Codec), l.Header.CompileTime.String()
		if l.Err != nil {
			codec, compile = "?", "unreadable"
		}
		use := l.LastUse.UTC().Format(time.RFC3339)
		if !l.HasAtime {
			use += " (mtime)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", l.Key, l.Size, codec, compile, use)
	}
	return tw.Flush()
}

// writeJAXVerify prints a verification; it returns the number of problems
// that are not possibly in flight, which the CLI turns into its exit
// status.
func writeJAXVerify(w io.Writer, d *jaxcache.Dir, r jaxcache.VerifyResult) (int, error) {
	bad := 0
	for _, p := range r.Problems {
		note := ""
		if p.MaybeInFlight {
			note = " (recently modified: may still be being written)"
		} else {
			bad++
		}
		if _, err := fmt.Fprintf(w, "BAD %s: %v%s\n", relPath(d.Path, p.Path), p.Err, note); err != nil {
			return bad, err
		}
	}
	_, err := fmt.Fprintf(w, "checked %d files: %d ok, %d bad (%s of entries decompress to %s)\n",
		r.Checked, r.Checked-len(r.Problems), len(r.Problems), fmtBytes(r.Compressed), fmtBytes(r.Decompressed))
	return bad, err
}

// writeJAXPrune prints what jaxcache.Prune did.
func writeJAXPrune(w io.Writer, d string, r jaxcache.PruneResult, dryRun bool) error {
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	for _, p := range r.Removed {
		fmt.Fprintf(w, "%s %s\n", verb, relPath(d, p))
	}
	for _, k := range r.Kept {
		fmt.Fprintf(w, "kept %s: %s\n", relPath(d, k.Path), k.Reason)
	}
	lock := "JAX's lock held"
	if !r.Locked {
		lock = "no JAX lock file, relied on the grace period and open-file checks"
	}
	_, err := fmt.Fprintf(w, "%s %d files, %s: %s -> %s (%s)\n", verb, len(r.Removed), fmtBytes(r.RemovedBytes), fmtBytes(r.Before), fmtBytes(r.After), lock)
	return err
}

// writeJAXExplain prints an explanation.
func writeJAXExplain(w io.Writer, ex jaxcache.Explanation) error {
	for _, l := range ex.Lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	for _, e := range ex.SameModule {
		if _, err := fmt.Fprintf(w, "  %s  %d bytes  last used %s\n", e.Key, e.Size, e.LastUse.UTC().Format(time.RFC3339)); err != nil {
			return err
		}
	}
	return nil
}

// relPath is p relative to dir for display, or p when it is outside.
func relPath(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
