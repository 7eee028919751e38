package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/xlacache/xlacache/jaxcache"
)

// JAX cache directories in the CLI. A directory holding JAX entries
// ("<module>-<hash>-cache" files) is handled by these functions for
// stats, ls, verify, prune and explain; they cover XLA's subcaches in it
// too, which JAX itself never counts or evicts.

// isJAXDir reports whether dir holds JAX cache entries.
func isJAXDir(dir string) bool {
	ok, err := jaxcache.IsJAXDir(dir)
	return err == nil && ok
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

// jaxVerify fails when a file is damaged and was not modified recently
// (a recent one may still be being written by JAX).
func jaxVerify(ctx context.Context, w io.Writer, dir string) error {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	r, err := jaxcache.Verify(ctx, d, jaxcache.VerifyOptions{})
	if err != nil {
		return err
	}
	bad, err := jaxcache.WriteVerify(w, d, r)
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d damaged file(s) in JAX cache %s", bad, dir)
	}
	return nil
}

// jaxPrune bounds the directory to maxSize bytes; otherBytes are bytes of
// xlacache's own tiers in the same directory that count against it.
func jaxPrune(ctx context.Context, w io.Writer, dir string, maxSize, otherBytes int64, dryRun bool, logger *slog.Logger) error {
	r, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{MaxSize: maxSize, OtherBytes: otherBytes, DryRun: dryRun, Logger: logger})
	if err != nil {
		return err
	}
	return jaxcache.WritePrune(w, dir, r, dryRun)
}

func jaxExplain(ctx context.Context, w io.Writer, dir, query string) error {
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	ex, err := jaxcache.Explain(ctx, d, query)
	if err != nil {
		return err
	}
	return jaxcache.WriteExplain(w, ex)
}
