package cc

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// testCall is one call's C memory for xk_pool_test_part: the part
// counters (one more for part-count mismatches), the expected part count
// and how long each part works.
type testCall struct {
	bufs   unsafe.Pointer // void*[3]
	counts []atomic.Int64
	n      *int64
	spin   *int64
	mem    []unsafe.Pointer
}

func newTestCall(t testing.TB, n int, spin time.Duration) *testCall {
	alloc := func(size int) unsafe.Pointer {
		p := Alloc(size)
		if p == nil {
			t.Fatal("out of C memory")
		}
		return p
	}
	c := &testCall{}
	counts := alloc(8 * (n + 1))
	c.counts = unsafe.Slice((*atomic.Int64)(counts), n+1)
	c.n, c.spin = (*int64)(alloc(8)), (*int64)(alloc(8))
	*c.n, *c.spin = int64(n), int64(spin)
	c.bufs = alloc(3 * 8)
	slots := unsafe.Slice((*uintptr)(c.bufs), 3)
	slots[0], slots[1], slots[2] = uintptr(counts), uintptr(unsafe.Pointer(c.n)), uintptr(unsafe.Pointer(c.spin))
	c.mem = []unsafe.Pointer{counts, unsafe.Pointer(c.n), unsafe.Pointer(c.spin), c.bufs}
	t.Cleanup(func() {
		for _, p := range c.mem {
			Free(p)
		}
	})
	return c
}

// check fails unless every part ran exactly once and saw the call's part
// count; it resets the counters for the next call.
func (c *testCall) check(n int) error {
	defer func() {
		for i := range c.counts {
			c.counts[i].Store(0)
		}
	}()
	if bad := c.counts[n].Load(); bad != 0 {
		return fmt.Errorf("%d parts saw a part count other than %d", bad, n)
	}
	for p := 0; p < n; p++ {
		if got := c.counts[p].Load(); got != 1 {
			return fmt.Errorf("part %d of %d ran %d times", p, n, got)
		}
	}
	return nil
}

// TestPoolRunsEveryPartOnce checks that every part of every call runs
// exactly once, with the call's part count, for thread counts 1-3 and
// part counts around the edges (0, 1, odd, fewer and more parts than
// threads), both straight after a previous call and after a pause
// (workers asleep).
func TestPoolRunsEveryPartOnce(t *testing.T) {
	forSpinModes(t, testPoolRunsEveryPartOnce)
}

// spinModes are setSpin's modes, by name.
var spinModes = []struct {
	name string
	mode int
}{{"spin=auto", 0}, {"spin=always", 1}, {"spin=never", -1}}

// forSpinModes runs test once in each of spinModes, as subtests.
func forSpinModes(t *testing.T, test func(t *testing.T)) {
	for _, m := range spinModes {
		t.Run(m.name, func(t *testing.T) {
			setSpin(m.mode)
			defer setSpin(0)
			test(t)
		})
	}
}

func testPoolRunsEveryPartOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		for _, n := range []int{0, 1, 2, 3, 7, 64} {
			for _, gap := range []time.Duration{0, 200 * time.Microsecond} {
				t.Run(fmt.Sprintf("threads=%d/n=%d/gap=%v", threads, n, gap), func(t *testing.T) {
					StartWorkers(threads - 1)
					c := newTestCall(t, n, 0)
					for call := 0; call < 3; call++ {
						if gap > 0 {
							time.Sleep(gap) // the workers are blocked
						}
						RunParts(testPartFn(), c.bufs, n, threads-1)
						if err := c.check(n); err != nil {
							t.Fatalf("call %d: %v", call, err)
						}
					}
				})
			}
		}
	}
}

// TestPoolUnderLoad runs many concurrent calls with thread counts 1-3
// while other goroutines keep every CPU busy, so that workers are late or
// never pick a call up and callers run the parts themselves: every call
// must still return with every part done once, and in bounded time (the
// test's timeout catches a hang).
func TestPoolUnderLoad(t *testing.T) { forSpinModes(t, testPoolUnderLoad) }

func testPoolUnderLoad(t *testing.T) {
	stop := make(chan struct{})
	var hogs sync.WaitGroup
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		hogs.Add(1)
		go func() {
			defer hogs.Done()
			for x := 0; ; x++ {
				select {
				case <-stop:
					return
				default:
				}
				if x%1024 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { close(stop); hogs.Wait() }()
	StartWorkers(2)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		c := newTestCall(t, 9, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for call := 0; call < 300; call++ {
				n := 1 + (call*7+g)%9
				*c.n = int64(n)
				RunParts(testPartFn(), c.bufs, n, (call+g)%3)
				if err := c.check(n); err != nil {
					errs <- fmt.Errorf("call %d of goroutine %d: %v", call, g, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkPoolRoundTrip measures a parallel call of two 20 µs parts on
// two threads (ideal: 20 µs; 40 µs when the caller ends up running both
// because no worker came in time), back to back and after a pause
// (workers asleep: the cost of the wake-up), in each of spinModes. It is
// how the goroutine pool this one replaced (45 µs a call both ways on
// the shared 2-core VM: the caller ran both parts) and the spinning
// described at kernelFn.run were compared.
func BenchmarkPoolRoundTrip(b *testing.B) {
	StartWorkers(1)
	c := newTestCall(b, 2, 20*time.Microsecond)
	for _, m := range spinModes {
		for _, gap := range []time.Duration{0, 200 * time.Microsecond} {
			b.Run(fmt.Sprintf("%s/gap=%v", m.name, gap), func(b *testing.B) {
				setSpin(m.mode)
				defer setSpin(0)
				RunParts(testPartFn(), c.bufs, 2, 1)
				var in time.Duration
				for i := 0; i < b.N; i++ {
					if gap > 0 {
						time.Sleep(gap)
					}
					t0 := time.Now()
					RunParts(testPartFn(), c.bufs, 2, 1)
					in += time.Since(t0)
				}
				b.ReportMetric(float64(in.Nanoseconds())/float64(b.N), "ns/call")
			})
		}
	}
}

// TestSpinRule: the verdict of one reading of the machine's running
// threads. On 2 CPUs, a caller and a spinning worker with a passing
// third thread (the Go runtime's sysmon) may spin; two other busy threads
// may not, whether the worker was spinning (counted running) or blocked
// (counted as what spinning would add) when the count was read; idle
// workers beyond what the latest call wanted (a pool grown by an earlier
// call with more threads) do not count.
func TestSpinRule(t *testing.T) {
	for _, c := range []struct {
		running, idle, wanted, cpus int
		want                        bool
	}{
		{2, 0, 1, 2, true},  // caller and spinning worker
		{3, 0, 1, 2, true},  // the same and a passing thread
		{1, 1, 1, 2, true},  // caller, worker blocked
		{2, 1, 1, 2, true},  // caller, worker blocked, one other thread
		{3, 1, 1, 2, false}, // caller, worker blocked, two other threads
		{4, 0, 1, 2, false}, // caller, spinning worker, two other threads
		{1, 7, 1, 2, true},  // a pool of 8 from an earlier call, 2 threads now
		{1, 7, 7, 2, false}, // 8 threads wanted on 2 CPUs
		{9, 0, 7, 8, true},  // 8 threads on 8 CPUs and a passing one
		{10, 0, 7, 8, false},
		{0, 0, 1, 2, false}, // the count could not be read
		{-1, 0, 1, 2, false},
	} {
		if got := spinRule(c.running, c.idle, c.wanted, c.cpus); got != c.want {
			t.Errorf("running %d, idle %d, wanted %d, %d CPUs: %v, want %v", c.running, c.idle, c.wanted, c.cpus, got, c.want)
		}
	}
}
