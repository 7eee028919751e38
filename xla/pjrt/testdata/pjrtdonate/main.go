// Command pjrtdonate is the PJRT host of the pjrt package's donation
// tests: it loads a plugin through go-xla's loader (by name through
// PJRT_PLUGIN_LIBRARY_PATH, or by path), compiles one StableHLO file whose
// main takes two f32[256] arguments, the first aliased to output 0
// (tf.aliasing_output), and runs it twice: once donating nothing, once
// donating every input. It prints one JSON line saying, per run, whether
// each input buffer is still readable afterwards and whether output 0
// lives at the first input's address (updated in place), plus the
// wrapper's counters when the plugin is the caching wrapper. The outputs'
// values are checked here; a wrong value is an error.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/gomlx/go-xla/pkg/pjrt"

	"github.com/xlacache/xlacache/internal/pjrtcounters"
)

// execution is what one run of the program did to its buffers.
type execution struct {
	Donated bool `json:"donated"`
	// InputsAlive: per input, whether it can still be read after the run.
	InputsAlive []bool `json:"inputs_alive"`
	// InPlace: output 0 is at input 0's address (the alias was honoured).
	InPlace bool `json:"in_place"`
}

type report struct {
	Plugin   string      `json:"plugin"`
	Runs     []execution `json:"runs"`
	Counters []uint64    `json:"counters,omitempty"` // inner compiles, hits, fallbacks, stored, deserialize ns
}

const n = 256

func main() {
	plugin := flag.String("plugin", "cpu", "plugin name or path")
	flag.Parse()
	if flag.NArg() != 1 {
		fail(fmt.Errorf("usage: pjrtdonate [-plugin P] program.mlir"))
	}
	p, err := pjrt.GetPlugin(*plugin)
	if err != nil {
		fail(err)
	}
	client, err := p.NewClient(nil)
	if err != nil {
		fail(err)
	}
	text, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fail(err)
	}
	exe, err := client.Compile().WithStableHLO(text).Done()
	if err != nil {
		fail(fmt.Errorf("compile: %w", err))
	}
	rep := report{Plugin: p.Path()}
	for _, donate := range []bool{false, true} {
		e, err := run(client, exe, donate)
		if err != nil {
			fail(fmt.Errorf("run (donate %v): %w", donate, err))
		}
		rep.Runs = append(rep.Runs, e)
	}
	exe.Destroy()
	if c, err := pjrtcounters.Read(p.Path()); err == nil {
		rep.Counters = []uint64{c.InnerCompiles, c.Hits, c.Fallbacks, c.Stored, uint64(c.Deserialize)}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pjrtdonate:", err)
	os.Exit(1)
}

// run executes exe once on x[i] = i, y[i] = 2 and checks the outputs
// (x+y, x*y).
func run(client *pjrt.Client, exe *pjrt.LoadedExecutable, donate bool) (execution, error) {
	e := execution{Donated: donate}
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = float32(i), 2
	}
	x, err := pjrt.ArrayToBuffer(client, xs, n)
	if err != nil {
		return e, err
	}
	defer x.Destroy()
	y, err := pjrt.ArrayToBuffer(client, ys, n)
	if err != nil {
		return e, err
	}
	defer y.Destroy()
	xAddr, err := x.UnsafePointer()
	if err != nil {
		return e, fmt.Errorf("input address: %w", err)
	}
	cfg := exe.Execute(x, y)
	if donate {
		cfg = cfg.DonateAll()
	} else {
		cfg = cfg.DonateNone()
	}
	outs, err := cfg.Done()
	if err != nil {
		return e, err
	}
	defer func() {
		for _, o := range outs {
			o.Destroy()
		}
	}()
	if len(outs) != 2 {
		return e, fmt.Errorf("%d outputs, want 2", len(outs))
	}
	sum, _, err := pjrt.BufferToArray[float32](outs[0])
	if err != nil {
		return e, fmt.Errorf("output 0: %w", err)
	}
	prod, _, err := pjrt.BufferToArray[float32](outs[1])
	if err != nil {
		return e, fmt.Errorf("output 1: %w", err)
	}
	for i := range n {
		if sum[i] != float32(i)+2 || prod[i] != float32(i)*2 {
			return e, fmt.Errorf("outputs at %d: %v, %v; want %v, %v", i, sum[i], prod[i], float32(i)+2, float32(i)*2)
		}
	}
	for _, in := range []*pjrt.Buffer{x, y} {
		_, _, err := pjrt.BufferToArray[float32](in)
		e.InputsAlive = append(e.InputsAlive, err == nil)
	}
	if oAddr, err := outs[0].UnsafePointer(); err == nil {
		e.InPlace = oAddr == xAddr
	}
	return e, nil
}
