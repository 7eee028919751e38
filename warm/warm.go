// Package warm compiles many StableHLO programs through a cache before a
// job needs them (`xlacache warm`): finding the programs, a bounded pool of
// compiles, and the report.
package warm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// Result is what warming one program did.
type Result struct {
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
	// Missed is true when XLACACHE_REQUIRE_HIT=fail refused to compile
	// the program because the cache could not serve it; Err says why.
	Missed bool `json:"missed,omitempty"`
}

// Report is what warming many programs did (the --json form of
// `xlacache warm`).
type Report struct {
	Dir      string   `json:"dir"`
	Writer   bool     `json:"writer"`
	Programs []Result `json:"programs"`
	Hits     int      `json:"hits"`
	Compiled int      `json:"compiled"`
	Stored   int      `json:"stored"`
	// Failed counts programs that could not be read, parsed or compiled;
	// Missed those that XLACACHE_REQUIRE_HIT=fail refused to compile
	// (not in Failed).
	Failed int `json:"failed"`
	Missed int `json:"missed"`
	// CompileTime sums the backend compiles; Wall is the whole warm.
	CompileTime time.Duration `json:"compile_time_ns"`
	Wall        time.Duration `json:"wall_ns"`
	// Export is the --export archive, if any.
	Export *Export `json:"export,omitempty"`
}

// Export describes the archive written after warming (--export).
type Export struct {
	Path    string `json:"path"`
	Files   int64  `json:"files"`
	Bytes   int64  `json:"bytes"`
	Skipped int64  `json:"skipped"`
}

// Find expands args into .mlir files: a file is taken as named
// (whatever its extension), a directory is searched recursively for
// *.mlir (symbolic links to directories are not followed). Paths that
// cannot be read become failed results naming them.
func Find(args []string) ([]string, []Result) {
	var paths []string
	var failed []Result
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			failed = append(failed, Result{Path: a, Err: err.Error()})
			continue
		}
		if !st.IsDir() {
			paths = append(paths, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				failed = append(failed, Result{Path: p, Err: err.Error()})
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
			failed = append(failed, Result{Path: a, Err: err.Error()})
		}
	}
	slices.Sort(paths)
	return slices.Compact(paths), failed
}

// All runs compile on every path, at most jobs at once, calling done
// after each; it stops handing out paths when ctx is done. Results are in
// no particular order.
func All(ctx context.Context, paths []string, jobs int, compile func(path string) Result, done func()) []Result {
	work := make(chan string)
	res := make(chan Result)
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
	var out []Result
	for r := range res {
		out = append(out, r)
		done()
	}
	return out
}

// One compiles the program at path through c.
func One(ctx context.Context, c *cache.Cache, b cache.Backend, path string) Result {
	r := Result{Path: path}
	fail := func(err error) Result {
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
	r.Module = moduleName(m, path)
	start := time.Now()
	exe, rep, err := cache.Compile(ctx, c, b, cache.Program{Name: r.Module, Text: src})
	r.Time = time.Since(start)
	if rep != nil {
		r.Key, r.Hit, r.Source, r.Stored, r.CompileTime = rep.Key, rep.Hit, rep.Source, rep.Stored, rep.CompileTime
	}
	if err != nil {
		r.Missed = errors.Is(err, cache.ErrHitRequired)
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	if cl, ok := exe.(io.Closer); ok {
		cl.Close() // warming keeps nothing loaded
	}
	return r
}

// NewReport sums results (sorted by path) into a report for the cache
// directory dir.
func NewReport(dir string, writer bool, results []Result) Report {
	rep := Report{Dir: dir, Writer: writer, Programs: results}
	slices.SortFunc(rep.Programs, func(a, b Result) int { return strings.Compare(a.Path, b.Path) })
	for _, r := range rep.Programs {
		switch {
		case r.Missed:
			rep.Missed++
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
	return rep
}

// moduleName is the module name a compile of the program at path uses,
// as `xlacache run` and `explain` name it: the module's @name, else the
// file name without its extension.
func moduleName(m *stablehlo.Module, path string) string {
	if m != nil && m.Name != "" {
		return m.Name
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}
