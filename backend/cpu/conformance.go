package cpu

import (
	"context"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

func init() {
	stablehlo.RegisterRunner("cpu", ConformanceRunner(nil))
}

// ConformanceRunner returns a stablehlo.RunFunc that compiles each test
// program with the cpu backend (using c's kernel and autotune tiers when c
// is non-nil) and runs it; the programs' check.* assertions decide the
// outcome. Programs that take arguments are reported as unsupported, as
// the interpreter runner does.
func ConformanceRunner(c *cache.Cache) stablehlo.RunFunc {
	b := New()
	return func(ctx context.Context, m *stablehlo.Module) error {
		if _, err := stablehlo.ConformanceMain(m); err != nil {
			return err
		}
		exe, err := b.CompileModule(ctx, m, c.ForBackend(b.Name(), true))
		if err != nil {
			return err
		}
		defer exe.Close()
		_, err = exe.Run(ctx, nil)
		return err
	}
}
