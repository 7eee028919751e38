// Package memtest measures what code allocates, for tests that hold the
// cache to its memory bounds: an object over the size bound must be refused
// from its size, before its bytes are read, so reading it shows up as
// allocation of about its size.
package memtest

import "runtime"

// Allocated returns how many bytes of heap the process allocated while f
// ran (runtime.MemStats.TotalAlloc, which only grows: collections during f
// do not hide what it allocated). Other goroutines' allocations count too,
// so tests compare it against bounds far from the values they tell apart.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	// Collect first so that finishing earlier work's sweep does not land
	// in f's window.
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
