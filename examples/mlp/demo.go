package mlp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
)

// DemoOptions configure Demo.
type DemoOptions struct {
	// Root is the directory under which the demo's own directory is
	// created (it is created if missing).
	Root string
	// Keep keeps the demo's directory instead of removing it at the end.
	Keep bool
	// Self is the xlacache binary that Demo runs twice as
	// "Self run mlp.mlir --report-json FILE".
	Self string
	// Stdout receives the demo's report, Stderr the runs' logs.
	Stdout, Stderr io.Writer
}

// Demo runs the MLP example twice, each time in a new process of
// o.Self, against a fresh cache directory created under o.Root. The first
// run is honestly cold (the directory is new, so every tier misses: it
// autotunes, compiles every kernel and stores the executable); the second
// is a warm start that loads the stored executable without compiling. It
// prints both runs' reports, each process's wall time and the ratios.
func Demo(ctx context.Context, o DemoOptions) error {
	out := o.Stdout
	if err := os.MkdirAll(o.Root, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	work, err := os.MkdirTemp(o.Root, "demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !o.Keep {
		defer os.RemoveAll(work)
	}
	prog := filepath.Join(work, "mlp.mlir")
	if err := os.WriteFile(prog, Source, 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cacheDir := filepath.Join(work, "cache")
	fmt.Fprintf(out, "xlacache demo: the MLP example (64x784 -> 512 -> 512 -> 10, tanh, softmax) on the cpu backend\n")
	fmt.Fprintf(out, "fresh cache directory: %s\n\n", cacheDir)
	fmt.Fprint(out, demoIntro)
	var times [2]time.Duration
	var reps [2]RunReport
	for i, label := range []string{"1st process (cold: empty cache)", "2nd process (warm: same cache)"} {
		fmt.Fprintf(out, "== %s: xlacache run mlp.mlir\n", label)
		repFile := filepath.Join(work, fmt.Sprintf("report%d.json", i))
		cargs := []string{"run", prog, "--report-json", repFile}
		if i == 0 {
			cargs = append(cargs, "--verbose")
		}
		c := exec.CommandContext(ctx, o.Self, cargs...)
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "XLACACHE_DIR=") && !strings.HasPrefix(kv, "XLACACHE_ROLE=") {
				env = append(env, kv)
			}
		}
		env = append(env, "XLACACHE_DIR="+cacheDir, "XLACACHE_ROLE=writer")
		// The demo shows a stored executable being loaded, so it stores
		// one however fast the cold compile was: on a quiet, fast machine
		// the tuned MLP compiles in under the default threshold of 1 s
		// (0.7-0.9 s on the development machine), and the second run
		// would miss. A threshold the user set is kept.
		if _, set := os.LookupEnv(config.EnvMinCompileTime); !set {
			env = append(env, config.EnvMinCompileTime+"=0")
		}
		c.Env = env
		var buf bytes.Buffer
		c.Stdout = &buf
		c.Stderr = o.Stderr
		start := time.Now()
		err := c.Run()
		times[i] = time.Since(start)
		out.Write(indent(buf.Bytes()))
		if err != nil {
			return fmt.Errorf("demo: run %d failed: %w", i+1, err)
		}
		fmt.Fprintf(out, "   process wall time: %s\n\n", cli.FormatDuration(times[i]))
		data, err := os.ReadFile(repFile)
		if err == nil {
			err = json.Unmarshal(data, &reps[i])
		}
		if err != nil || reps[i].Report == nil {
			return fmt.Errorf("demo: reading the report of run %d: %v", i+1, err)
		}
	}
	if !reps[1].Report.Hit {
		return fmt.Errorf("demo: the second run missed the executables tier; see its report above")
	}
	cold := reps[0].Report.CompileTime
	// A warm start through the program text's alias (cache/alias.go) is
	// keyed in its "alias" phase instead of "key".
	warm := reps[1].Report.PhaseTime("alias") + reps[1].Report.PhaseTime("key") + reps[1].Report.PhaseTime("lookup") + reps[1].Report.PhaseTime("load")
	fmt.Fprintf(out, "compile %s cold vs key+lookup+load %s warm: %.0fx less time to a runnable program\n", cli.FormatDuration(cold), cli.FormatDuration(warm), float64(cold)/float64(warm))
	fmt.Fprintf(out, "whole processes (start-up included): cold %s, warm %s, %.0fx\n", cli.FormatDuration(times[0]), cli.FormatDuration(times[1]), float64(times[0])/float64(times[1]))
	if o.Keep {
		fmt.Fprintf(out, "kept %s\n", work)
	}
	return nil
}

// demoIntro tells someone new to XLA, before the cold run's long wait,
// what is cached and why the second run is fast.
const demoIntro = `What is cached: an ML compiler (XLA, or this cpu backend) turns a program's graph into machine code,
trying kernel variants to time them (autotuning) and compiling each kernel, which takes seconds to minutes.
The cache keeps the result, keyed by the program and the machine: a new process loads it instead of compiling.

`

// indent indents every line of b by three spaces.
func indent(b []byte) []byte {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "   " + l
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// RunReport is what `xlacache run --report-json FILE` writes and Demo
// reads: the cache's report of the compile and the run's duration.
type RunReport struct {
	Report *cache.Report `json:"report"`
	Run    time.Duration `json:"run_ns"`
}

// WriteRunReport writes the RunReport of rep and run to path.
func WriteRunReport(path string, rep *cache.Report, run time.Duration) error {
	data, err := json.Marshal(RunReport{Report: rep, Run: run})
	if err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}
