package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestGeneratedExamplesUpToDate: the committed .mlir files are exactly what
// the generator writes now, and each parses and verifies, so an edit to a
// model here cannot be forgotten in the files the tests and README run.
func TestGeneratedExamplesUpToDate(t *testing.T) {
	for _, ex := range programs {
		t.Run(ex.name, func(t *testing.T) {
			src, err := ex.build()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", ex.name, ex.name+".mlir")
			committed, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, committed) {
				t.Errorf("%s is stale: run `go run ./examples/gen` from the repository root", path)
			}
			if _, err := stablehlo.Parse(src, ex.name); err != nil {
				t.Errorf("generated %s does not parse: %v", ex.name, err)
			}
		})
	}
}
