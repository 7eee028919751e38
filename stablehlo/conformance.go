package stablehlo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ConformanceResult is the outcome for one test program.
type ConformanceResult struct {
	File   string
	Status string // "pass", "fail" or "unsupported"
	Detail string
}

// RunFunc executes a verified module's main function on some backend and
// returns nil when it ran and all its check.* assertions held. Errors
// wrapping ErrUnsupported are reported as "unsupported".
type RunFunc func(ctx context.Context, m *Module) error

// ConformanceMain returns the function a conformance run executes: m's
// main (Module.Main). A module without one, or whose main takes
// arguments, is not a self-checking test program; both are reported as
// unsupported (errors.Is(err, ErrUnsupported)) so that runners count them
// as skipped rather than failed.
func ConformanceMain(m *Module) (*Func, error) {
	f := m.Main()
	if f == nil {
		return nil, fmt.Errorf("%s: module has no @main function (nor a single public one): %w", m.File, ErrUnsupported)
	}
	if len(f.Args) > 0 {
		return nil, fmt.Errorf("%s: main takes %d arguments; conformance programs take none: %w", m.File, len(f.Args), ErrUnsupported)
	}
	return f, nil
}

// InterpRunner runs main with the reference interpreter (Eval).
func InterpRunner(ctx context.Context, m *Module) error {
	f, err := ConformanceMain(m)
	if err != nil {
		return err
	}
	_, err = EvalContext(ctx, m, f.Name, nil)
	return err
}

var (
	runnersMu sync.Mutex
	runners   = map[string]RunFunc{"interp": InterpRunner}
)

// RegisterRunner makes a backend available to `xlacache conformance
// --backend name`. The CPU backend registers "cpu" from its package's init
// (the binary must import that package).
func RegisterRunner(name string, run RunFunc) {
	runnersMu.Lock()
	defer runnersMu.Unlock()
	runners[name] = run
}

// Runner returns a registered backend runner and the sorted list of
// registered names.
func Runner(name string) (RunFunc, []string) {
	runnersMu.Lock()
	defer runnersMu.Unlock()
	names := make([]string, 0, len(runners))
	for n := range runners {
		names = append(names, n)
	}
	sort.Strings(names)
	return runners[name], names
}

// ConformanceFiles lists the .mlir files of dir in name order.
func ConformanceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("conformance directory: %w", err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".mlir") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

// RunOne parses, verifies and runs one test program.
func RunOne(ctx context.Context, path string, run RunFunc) (res ConformanceResult) {
	res.File = filepath.Base(path)
	defer func() {
		// A crashing backend must not take the whole run down; report it
		// as a failure of this file.
		if r := recover(); r != nil {
			res.Status, res.Detail = "fail", fmt.Sprintf("panic: %v", r)
		}
	}()
	src, err := os.ReadFile(path)
	if err != nil {
		return ConformanceResult{File: res.File, Status: "fail", Detail: err.Error()}
	}
	m, err := Parse(src, res.File)
	if err == nil {
		err = run(ctx, m)
	}
	switch {
	case err == nil:
		res.Status = "pass"
	case errors.Is(err, ErrUnsupported):
		res.Status, res.Detail = "unsupported", err.Error()
	default:
		res.Status, res.Detail = "fail", err.Error()
	}
	return res
}

// RunConformance runs every .mlir file in dir through run, printing one
// line per file ("pass NAME", "fail NAME: first mismatch", "unsupported
// NAME: reason") and the summary "N passed, N failed" (plus ", N skipped"
// when any were unsupported). err is non-nil only when the directory
// cannot be read or ctx is cancelled; callers exit non-zero when failed>0.
func RunConformance(ctx context.Context, dir string, run RunFunc, out io.Writer) (passed, failed, skipped int, err error) {
	files, err := ConformanceFiles(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	if len(files) == 0 {
		return 0, 0, 0, fmt.Errorf("conformance directory %s has no .mlir files", dir)
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return passed, failed, skipped, err
		}
		r := RunOne(ctx, f, run)
		switch r.Status {
		case "pass":
			passed++
			fmt.Fprintf(out, "pass %s\n", r.File)
		case "unsupported":
			skipped++
			fmt.Fprintf(out, "unsupported %s: %s\n", r.File, oneLine(r.Detail))
		default:
			failed++
			fmt.Fprintf(out, "fail %s: %s\n", r.File, oneLine(r.Detail))
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed", passed, failed)
	if skipped > 0 {
		fmt.Fprintf(out, ", %d skipped", skipped)
	}
	fmt.Fprintln(out)
	return passed, failed, skipped, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
