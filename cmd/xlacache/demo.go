package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/examples/mlp"
	"github.com/xlacache/xlacache/internal/cli"
)

// demoCmd is the README's main command: it runs the MLP example twice, each
// time in a new process, against a fresh cache directory. The first run is
// honestly cold (the directory is new, so every tier misses: it autotunes,
// compiles every kernel and stores the executable); the second is a warm
// start that loads the stored executable without compiling.
var demoCmd = &cobra.Command{
	Use:   "demo",
	Short: "Run the MLP example cold, then warm in a new process, and compare",
	Long: `Run examples/mlp (batch 64, 784→512→512→10, tanh, softmax) through the cpu
backend twice, each in a new xlacache process, with a fresh cache directory
created under the cache directory (XLACACHE_DIR, default
<user cache dir>/xlacache) and removed afterwards unless --keep is given.
The first process compiles cold (autotuning, C compilation, linking); the
second loads the executable from the cache. Both reports are shown, with
the wall-clock time of each process and the ratio.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runDemo,
}

func init() {
	demoCmd.Flags().Bool("keep", false, "keep the demo cache directory")
	rootCmd.AddCommand(demoCmd)
}

func runDemo(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	keep, _ := cmd.Flags().GetBool("keep")
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	root := opts.Dir
	if root == "" {
		ucd, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("demo: no cache directory (set XLACACHE_DIR): %w", err)
		}
		root = filepath.Join(ucd, "xlacache")
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	work, err := os.MkdirTemp(root, "demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if !keep {
		defer os.RemoveAll(work)
	}
	prog := filepath.Join(work, "mlp.mlir")
	if err := os.WriteFile(prog, mlp.Source, 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cacheDir := filepath.Join(work, "cache")
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: finding this program to re-run it: %w", err)
	}
	fmt.Fprintf(out, "xlacache demo: the MLP example (64x784 -> 512 -> 512 -> 10, tanh, softmax) on the cpu backend\n")
	fmt.Fprintf(out, "fresh cache directory: %s\n\n", cacheDir)
	fmt.Fprint(out, demoIntro)
	var times [2]time.Duration
	var reps [2]runReport
	for i, label := range []string{"1st process (cold: empty cache)", "2nd process (warm: same cache)"} {
		fmt.Fprintf(out, "== %s: xlacache run mlp.mlir\n", label)
		repFile := filepath.Join(work, fmt.Sprintf("report%d.json", i))
		cargs := []string{"run", prog, "--report-json", repFile}
		if i == 0 {
			cargs = append(cargs, "--verbose")
		}
		c := exec.CommandContext(ctx, self, cargs...)
		env := []string{}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "XLACACHE_DIR=") && !strings.HasPrefix(kv, "XLACACHE_ROLE=") {
				env = append(env, kv)
			}
		}
		// MinCompileTime stays at its default: the cold compile is well
		// above it, so storing the executable is not a demo special case.
		c.Env = append(env, "XLACACHE_DIR="+cacheDir, "XLACACHE_ROLE=writer")
		var buf bytes.Buffer
		c.Stdout = &buf
		c.Stderr = cmd.ErrOrStderr()
		start := time.Now()
		err := c.Run()
		times[i] = time.Since(start)
		out.Write(indent(buf.Bytes()))
		if err != nil {
			return fmt.Errorf("demo: run %d failed: %w", i+1, err)
		}
		fmt.Fprintf(out, "   process wall time: %s\n\n", fmtDur(times[i]))
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
	warm := reps[1].Report.PhaseTime("key") + reps[1].Report.PhaseTime("lookup") + reps[1].Report.PhaseTime("load")
	fmt.Fprintf(out, "compile %s cold vs key+lookup+load %s warm: %.0fx less time to a runnable program\n", fmtDur(cold), fmtDur(warm), float64(cold)/float64(warm))
	fmt.Fprintf(out, "whole processes (start-up included): cold %s, warm %s, %.0fx\n", fmtDur(times[0]), fmtDur(times[1]), float64(times[0])/float64(times[1]))
	if keep {
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

func indent(b []byte) []byte {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "   " + l
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}
