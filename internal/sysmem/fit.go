package sysmem

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// Fit checks that a piece of work fits in the memory avail reports the
// process can still allocate (check fails, saying what does not fit, when
// it does not), before the work allocates: Go cannot recover from a failed
// allocation, so refusing must happen while it is still possible. When the
// work fits, Fit sets Go's soft memory limit to what is available (unless
// GOMEMLIMIT is set), so that the garbage collector works harder instead of
// letting dead memory push the heap past it; restore undoes that. With
// nothing to check against (avail reports no bound), Fit does nothing.
func Fit(avail func() (Limit, bool), check func(Limit) error) (restore func(), err error) {
	restore = func() {}
	lim, ok := avail()
	if !ok {
		return restore, nil
	}
	if err := check(lim); err != nil {
		return restore, err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		held := int64(min(ms.Sys, math.MaxInt64/2))
		prev := debug.SetMemoryLimit(min(lim.Bytes, math.MaxInt64/2) + held)
		restore = func() { debug.SetMemoryLimit(prev) }
	}
	return restore, nil
}
