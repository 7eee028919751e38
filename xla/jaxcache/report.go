package jaxcache

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// The Write* functions render results for the xlacache CLI. They are
// here, beside the data, so that the output is tested with the package.

// WriteStats prints a directory's totals, XLA's subcaches included.
func WriteStats(w io.Writer, d *Dir) error {
	s := d.Stats()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "JAX cache\t%s\n", d.Path)
	fmt.Fprintf(tw, "executables\t%d entries\t%s\n", s.Entries, bytesText(s.EntryBytes))
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
		fmt.Fprintf(tw, "%s\t%d files\t%s%s\n", n, ss.Files, bytesText(ss.Bytes), extra)
	}
	fmt.Fprintf(tw, "total\t\t%s\t(JAX itself counts only the executables)\n", bytesText(s.TotalBytes))
	if d.Ignored > 0 {
		fmt.Fprintf(tw, "not JAX's\t%d other names in the directory\t(left alone)\n", d.Ignored)
	}
	return tw.Flush()
}

// WriteList prints entries, most recently used first.
func WriteList(w io.Writer, ls []Listing) error {
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

// WriteVerify prints a verification; it returns the number of problems
// that are not possibly in flight, which the CLI turns into its exit
// status.
func WriteVerify(w io.Writer, d *Dir, r VerifyResult) (int, error) {
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
		r.Checked, r.Checked-len(r.Problems), len(r.Problems), bytesText(r.Compressed), bytesText(r.Decompressed))
	return bad, err
}

// WritePrune prints what Prune did.
func WritePrune(w io.Writer, d string, r PruneResult, dryRun bool) error {
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
	_, err := fmt.Fprintf(w, "%s %d files, %s: %s -> %s (%s)\n", verb, len(r.Removed), bytesText(r.RemovedBytes), bytesText(r.Before), bytesText(r.After), lock)
	return err
}

// WriteExplain prints an explanation.
func WriteExplain(w io.Writer, ex Explanation) error {
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

func relPath(dir, p string) string {
	if r := relTo(dir, p); !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
