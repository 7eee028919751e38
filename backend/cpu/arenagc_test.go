package cpu

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestRunRecycledArenaUnderGC runs one executable many times with the
// garbage collector running between and during runs, dropping each run's
// outputs. Each Run reuses the previous one's arena, whose pointer slots
// still hold pointers to the last outputs (Go memory, freed by then);
// slots written as unsafe.Pointer ran the write barrier on those stale
// values and crashed the process with "found bad pointer in Go heap".
func TestRunRecycledArenaUnderGC(t *testing.T) {
	// Large outputs are objects of their own spans: freed, their pages go
	// to other spans, and a stale pointer into them is "bad".
	m := parseText(t, `func.func @main(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> (tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>) {
  %0 = stablehlo.add %a, %b : tensor<256x256xf32>
  %1 = stablehlo.multiply %a, %b : tensor<256x256xf32>
  %2 = stablehlo.subtract %a, %b : tensor<256x256xf32>
  return %0, %1, %2 : tensor<256x256xf32>, tensor<256x256xf32>, tensor<256x256xf32>
}
`)
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	for _, threads := range []int{1, 2} {
		be := &Backend{NoTune: true, Threads: threads}
		exe, err := be.CompileModule(context.Background(), m, nil)
		if err != nil {
			t.Fatal(err)
		}
		args := randomArgs(m, 3)
		first, err := exe.Run(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			out, err := exe.Run(context.Background(), args)
			if err != nil {
				t.Fatal(err)
			}
			for j := range out {
				if string(out[j].Data) != string(first[j].Data) {
					t.Fatalf("threads %d, run %d: output %d differs from the first run's", threads, i, j)
				}
			}
			// Garbage between runs, so the freed outputs' memory is
			// reused and swept while the arena still points into it.
			// Spans of many sizes come and go, so the span records of
			// the freed outputs are reused for other memory.
			sink = sink[:0]
			for k := range 16 {
				sink = append(sink, make([]byte, 8<<10*(1+(i+k)%37)))
			}
			if i%50 == 0 {
				runtime.GC()
			}
		}
		exe.Close()
	}
}

// sink keeps TestRunRecycledArenaUnderGC's garbage from being optimized
// away.
var sink [][]byte
