package cc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*xk_fn)(void**);

static void xk_call(void* fn, void** bufs) { ((xk_fn)fn)(bufs); }

typedef void (*xk_pfn)(void**, int64_t, int64_t);

static void xk_call_part(void* fn, void** bufs, int64_t t, int64_t n) { ((xk_pfn)fn)(bufs, t, n); }

// xk_syms looks up n names, packed one after another with their NULs, in
// one call: out[i] is the address of the i-th, or NULL.
static void xk_syms(void* h, const char* names, size_t n, void** out) {
	for (size_t i = 0; i < n; i++) {
		out[i] = dlsym(h, names);
		names += strlen(names) + 1;
	}
}

static void* xk_alloc(size_t n) {
	void* p = NULL;
	if (n == 0) n = 1;
	if (posix_memalign(&p, 64, n) != 0) return NULL;
	memset(p, 0, n);
	return p;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Library is a loaded shared object.
type Library struct {
	mu     sync.Mutex
	handle unsafe.Pointer
	path   string
}

// Open dlopens the shared object at path. RTLD_LOCAL keeps its symbols out
// of the global namespace, so two libraries that both define a kernel of the
// same (content-derived) name cannot interfere.
func Open(path string) (*Library, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	// dlerror's message is per thread: the goroutine stays on the thread
	// that called dlopen until it has read it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := C.dlopen(cpath, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("cc: loading shared object %s: %s", path, dlerror())
	}
	return &Library{handle: h, path: path}, nil
}

// PrepareLoad does ahead of time what a process's first OpenBytes would
// otherwise wait for: the memory-file probe (memfdFlags) and loading
// libm.so.6, which a kernel library links when its kernels call the math
// library (link.go: a self-contained one links none; the autotuner's
// candidate libraries are linked by the driver) and a Go process does not
// otherwise have: the loader reads it from disk, relocates it and maps
// it, about half of such a first load's 0.3-0.6 ms. libm stays loaded,
// as it would after that first load. Backend.Prepare calls it in the
// background; it reports nothing: a load that fails says why.
func PrepareLoad() { prepareLoad() }

var prepareLoad = sync.OnceFunc(func() {
	useMemfd()
	name := C.CString("libm.so.6")
	defer C.free(unsafe.Pointer(name))
	C.dlopen(name, C.RTLD_NOW|C.RTLD_LOCAL) // never closed; NULL where there is none
})

// OpenBytes loads a shared object held in memory. On Linux it goes through
// an anonymous memory file (openMemfd); elsewhere, or when memory files or
// /proc are unavailable, through a file in a fresh private directory
// (openTempDir). Neither leaves anything behind, and in neither can another
// user replace the bytes between the write and dlopen.
func OpenBytes(data []byte) (*Library, error) {
	if useMemfd() {
		lib, err := openMemfd(data)
		if !errors.Is(err, errNoMemfd) {
			return lib, err
		}
		// A memory file that could not be made (a seccomp filter, a
		// full fd table) leaves the directory path, which may still work.
	}
	return openTempDir(data)
}

// openTempDir writes a shared object to a fresh private directory (0700,
// file 0600) and opens it. The directory is removed right after dlopen,
// which keeps the mapping alive while leaving nothing behind.
func openTempDir(data []byte) (*Library, error) {
	dir, err := os.MkdirTemp("", "xlacache-so-")
	if err != nil {
		return nil, fmt.Errorf("cc: creating directory for shared object: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cc: securing %s: %w", dir, err)
	}
	path := filepath.Join(dir, "lib.so")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("cc: writing shared object: %w", err)
	}
	return Open(path)
}

// errNoMemfd marks a failure to set up a memory file, as opposed to a
// shared object that would not load: OpenBytes falls back on the former.
var errNoMemfd = errors.New("cc: no memory file for shared object")

// loaded reports whether the dynamic loader already has an object loaded
// under name (dlopen with RTLD_NOLOAD matches loaded objects by the name
// they were opened as, without loading anything).
func loaded(name string) bool {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	h := C.dlopen(cname, C.RTLD_LAZY|C.RTLD_LOCAL|C.RTLD_NOLOAD)
	if h == nil {
		return false
	}
	C.dlclose(h) // NOLOAD took a reference
	return true
}

func dlerror() string {
	e := C.dlerror()
	if e == nil {
		return "unknown dlopen error"
	}
	return C.GoString(e)
}

// Sym returns the address of the named kernel.
func (l *Library) Sym(name string) (unsafe.Pointer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil, fmt.Errorf("cc: library %s is closed", l.path)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	runtime.LockOSThread() // see Open
	defer runtime.UnlockOSThread()
	C.dlerror()
	p := C.dlsym(l.handle, cname)
	if p == nil {
		return nil, fmt.Errorf("cc: kernel %s not found in shared object: %s", name, dlerror())
	}
	return p, nil
}

// Syms returns the addresses of names, nil for each one the library does
// not define, in one call into C: a kernel library's entry points are
// looked up together when it is loaded, where a Sym per name (a few cgo
// calls each, and an error string for every optional name not found) was
// about 2.5 µs a kernel, a tenth of a small program's warm start. A name
// containing a NUL byte is an error: it would shift every later name.
func (l *Library) Syms(names []string) ([]unsafe.Pointer, error) {
	size := 0
	for _, n := range names {
		if strings.IndexByte(n, 0) >= 0 {
			return nil, fmt.Errorf("cc: symbol name %q contains a NUL byte", n)
		}
		size += len(n) + 1
	}
	if len(names) == 0 {
		return nil, nil
	}
	packed := make([]byte, 0, size)
	for _, n := range names {
		packed = append(append(packed, n...), 0)
	}
	out := C.malloc(C.size_t(8 * len(names)))
	if out == nil {
		return nil, errors.New("cc: out of memory looking up symbols")
	}
	defer C.free(out)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil, fmt.Errorf("cc: library %s is closed", l.path)
	}
	C.xk_syms(l.handle, (*C.char)(unsafe.Pointer(&packed[0])), C.size_t(len(names)), (*unsafe.Pointer)(out))
	return append([]unsafe.Pointer(nil), unsafe.Slice((*unsafe.Pointer)(out), len(names))...), nil
}

// Close unloads the library. Kernel pointers obtained from it become invalid.
func (l *Library) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == nil {
		return nil
	}
	runtime.LockOSThread() // see Open
	defer runtime.UnlockOSThread()
	rc := C.dlclose(l.handle)
	l.handle = nil
	if rc != 0 {
		return fmt.Errorf("cc: closing %s: %s", l.path, dlerror())
	}
	return nil
}

// Call runs a kernel with the ABI every generated kernel has:
// void k(void** bufs), bufs being the kernel's inputs then outputs. bufs
// must be C memory (see Alloc) holding C pointers.
func Call(fn unsafe.Pointer, bufs unsafe.Pointer) {
	C.xk_call(fn, (*unsafe.Pointer)(bufs))
}

// CallPart runs part t of n of a parallel kernel, whose ABI is
// void k_par(void** bufs, int64_t t, int64_t n): the kernel does the share
// of its work that part t of n owns, so running every t in 0..n-1 (in any
// order, at the same time or not) does all of it. bufs is as for Call.
func CallPart(fn unsafe.Pointer, bufs unsafe.Pointer, t, n int) {
	C.xk_call_part(fn, (*unsafe.Pointer)(bufs), C.int64_t(t), C.int64_t(n))
}

// Alloc returns n zeroed bytes of 64-byte-aligned C memory, or nil when the
// allocation fails. C memory is used for kernel buffers because kernels
// receive arrays of pointers, which cgo forbids for Go memory.
func Alloc(n int) unsafe.Pointer {
	if n < 0 {
		return nil
	}
	return C.xk_alloc(C.size_t(n))
}

// Free releases memory from Alloc.
func Free(p unsafe.Pointer) {
	if p != nil {
		C.free(p)
	}
}
