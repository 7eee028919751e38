// Package pjrtcounters reads the counters of xlacache's caching PJRT
// wrapper (xla/pjrt/csrc/wrapper.c, xlacache_pjrt_counters) from a wrapper
// already loaded into this process, for the test hosts and benchmarks
// that drive real plugins through go-xla. It never loads a library: a
// path that is not loaded yet, or a library without the symbol (the plain
// plugin), is reported as not a wrapper.
package pjrtcounters

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
typedef void (*counters_fn)(unsigned long long*, int);
// read_counters fills out (n slots) from the wrapper loaded from path;
// -1 when path is not loaded or has no counters.
static int read_counters(const char* path, unsigned long long* out, int n) {
	void* h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
	if (!h) return -1;
	counters_fn f = (counters_fn)dlsym(h, "xlacache_pjrt_counters");
	if (!f) { dlclose(h); return -1; }
	f(out, n);
	dlclose(h);
	return 0;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Counters are the wrapper's counters, in the order of its C function.
type Counters struct {
	InnerCompiles, Hits, Fallbacks, Stored uint64
	// Deserialize, InnerCompile, CompileCall and Probe are the time spent
	// in the inner DeserializeAndLoad, the inner compile, whole compile
	// calls (compiles or hits) and hits' probes.
	Deserialize, InnerCompile, CompileCall, Probe time.Duration
}

// Read returns the counters of the wrapper loaded from path.
func Read(path string) (Counters, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var c [8]C.ulonglong
	if C.read_counters(cs, &c[0], C.int(len(c))) != 0 {
		return Counters{}, fmt.Errorf("no caching PJRT wrapper loaded from %s", path)
	}
	d := func(v C.ulonglong) time.Duration { return time.Duration(v) }
	return Counters{
		InnerCompiles: uint64(c[0]), Hits: uint64(c[1]), Fallbacks: uint64(c[2]), Stored: uint64(c[3]),
		Deserialize: d(c[4]), InnerCompile: d(c[5]), CompileCall: d(c[6]), Probe: d(c[7]),
	}, nil
}
