package cpu

import (
	"context"
	"fmt"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// CompileParsed compiles p, already parsed and verified as m, with a new
// cpu backend through c (cache.Compile: p is not parsed again), reporting
// each stage's progress to progress when it is non-nil. The caller closes
// the executable.
func CompileParsed(ctx context.Context, c *cache.Cache, p cache.Program, m *stablehlo.Module, progress func(stage string, done, total int)) (*Executable, *cache.Report, error) {
	b := New()
	b.Progress = progress
	b.UseParsed(p, m)
	exe, rep, err := cache.Compile(ctx, c, b, p)
	if err != nil {
		return nil, rep, err
	}
	ce, ok := exe.(*Executable)
	if !ok {
		return nil, rep, fmt.Errorf("cpu backend returned %T", exe)
	}
	return ce, rep, nil
}
