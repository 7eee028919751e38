package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolRunsEveryPartOnce drives the worker pool with Go part functions
// and checks that every part of every call runs exactly once, with the
// call's part count, for thread counts 1-3 and part counts around the
// edges (0, 1, odd, fewer and more parts than threads), both straight
// after a previous call and after a pause (workers asleep).
func TestPoolRunsEveryPartOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		for _, n := range []int{0, 1, 2, 3, 7, 64} {
			for _, gap := range []time.Duration{0, 200 * time.Microsecond} {
				t.Run(fmt.Sprintf("threads=%d/n=%d/gap=%v", threads, n, gap), func(t *testing.T) {
					for call := 0; call < 3; call++ {
						if gap > 0 {
							time.Sleep(gap) // the workers are blocked on the channel
						}
						runs := make([]atomic.Int32, n)
						var wrongN atomic.Int32
						workers.parallel(func(p, pn int) {
							if pn != n {
								wrongN.Add(1)
							}
							runs[p].Add(1)
						}, threads, n)
						if wrongN.Load() != 0 {
							t.Fatalf("call %d: a part saw a part count other than %d", call, n)
						}
						for p := range runs {
							if got := runs[p].Load(); got != 1 {
								t.Fatalf("call %d: part %d of %d ran %d times", call, p, n, got)
							}
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
func TestPoolUnderLoad(t *testing.T) {
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
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for call := 0; call < 300; call++ {
				n := 1 + (call*7+g)%9
				var sum atomic.Int64
				workers.parallel(func(p, _ int) {
					sum.Add(int64(p + 1))
					for i := 0; i < (p+call)%5*200; i++ {
						_ = i * i // uneven parts: some finish later than others
					}
				}, 1+(call+g)%3, n)
				if got, want := sum.Load(), int64(n*(n+1)/2); got != want {
					errs <- fmt.Errorf("call %d of goroutine %d: parts summed to %d, want %d", call, g, got, want)
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
// because no worker woke in time), back to back and after a pause
// (workers asleep: the cost of the futex wake-ups). It is how the polling
// pool described at pool was compared.
func BenchmarkPoolRoundTrip(b *testing.B) {
	busy := func(int, int) {
		for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
		}
	}
	for _, gap := range []time.Duration{0, 200 * time.Microsecond} {
		b.Run(fmt.Sprintf("gap=%v", gap), func(b *testing.B) {
			workers.parallel(busy, 2, 2)
			var in time.Duration
			for i := 0; i < b.N; i++ {
				if gap > 0 {
					time.Sleep(gap)
				}
				t0 := time.Now()
				workers.parallel(busy, 2, 2)
				in += time.Since(t0)
			}
			b.ReportMetric(float64(in.Nanoseconds())/float64(b.N), "ns/call")
		})
	}
}
