package gomlx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/examples/gomlx/trainmodel"
)

// TestDumpTrainModel writes the StableHLO programs of trainmodel's
// training steps (the compilerbench gomlx-* programs) to the directory
// XLACACHE_DUMP_DIR, as <model>-<n>.mlir, for backend/cpu's
// BenchmarkKernelProfile (XLACACHE_PROFILE_EXAMPLES takes .mlir paths).
// It skips without the variable.
func TestDumpTrainModel(t *testing.T) {
	dir := os.Getenv("XLACACHE_DUMP_DIR")
	if dir == "" {
		t.Skip("set XLACACHE_DUMP_DIR to write trainmodel's StableHLO programs there")
	}
	for _, model := range trainmodel.Names {
		n := 0
		onProgram = func(_ string, text []byte) {
			n++
			p := filepath.Join(dir, fmt.Sprintf("%s-%d.mlir", model, n))
			if err := os.WriteFile(p, text, 0o644); err != nil {
				t.Error(err)
			}
		}
		be, err := NewWithLookup(context.Background(), "dir="+t.TempDir()+",notune", os.LookupEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		step, err := trainmodel.New(be, model)
		if err == nil {
			_, err = step.Run()
		}
		be.Finalize()
		onProgram = nil
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d programs", model, n)
	}
}
