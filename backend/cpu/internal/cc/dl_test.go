package cc

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// openModes are the two ways OpenBytes loads an object: through a memory
// file where the platform has one, and through a private temporary
// directory (the fallback, forced with memfdOff).
var openModes = []struct {
	name string
	off  bool
}{{"memfd", false}, {"tempdir", true}}

// withMode runs the test in one open mode, skipping the memory file where
// the platform or sandbox has none.
func withMode(t *testing.T, off bool) {
	t.Helper()
	if !off && !useMemfd() {
		t.Skip("no memory files here (memfd_create or /proc/self/fd unavailable)")
	}
	was := memfdOff
	memfdOff = off
	t.Cleanup(func() { memfdOff = was })
	// A private TMPDIR: other processes on the machine may create their
	// own xlacache-so-* directories, which must not count as leaks here.
	t.Setenv("TMPDIR", t.TempDir())
}

// constLib builds a shared object whose kernel k_val stores v in its
// first buffer, so that which object a call reached is observable.
func constLib(t *testing.T, c *Compiler, v int32) []byte {
	t.Helper()
	src := Source{Name: "k_val", Code: []byte(fmt.Sprintf("#include <stdint.h>\nvoid k_val(void** b){ *(int32_t*)b[0] = %d; }\n", v))}
	so, err := c.BuildShared(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	return so
}

// callVal calls k_val of lib and returns what it stored.
func callVal(t *testing.T, lib *Library) int32 {
	t.Helper()
	fn, err := lib.Sym("k_val")
	if err != nil {
		t.Fatal(err)
	}
	out := (*int32)(Alloc(4))
	table := (*[1]unsafe.Pointer)(Alloc(8))
	defer Free(unsafe.Pointer(out))
	defer Free(unsafe.Pointer(table))
	table[0] = unsafe.Pointer(out)
	Call(fn, unsafe.Pointer(table))
	return *out
}

// leftovers lists what OpenBytes left in the (test's private) TMPDIR.
func leftovers(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "xlacache-so-") {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestOpenBytesLoadsAndCalls(t *testing.T) {
	c := findOrSkip(t)
	so := constLib(t, c, 42)
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) {
			withMode(t, m.off)
			lib, err := OpenBytes(so)
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			if got := callVal(t, lib); got != 42 {
				t.Errorf("k_val stored %d, want 42", got)
			}
			if viaProc := strings.HasPrefix(lib.path, "/proc/self/fd/"); viaProc == m.off {
				t.Errorf("loaded as %s in mode %s", lib.path, m.name)
			}
			if l := leftovers(t); len(l) != 0 {
				t.Errorf("left behind %v", l)
			}
		})
	}
}

// TestOpenBytesDistinctObjects loads objects while others stay loaded and
// after others were closed, so that descriptor numbers (and with them
// /proc/self/fd names) are reused: every call must still reach its own
// object, never one the loader already had under the same name.
func TestOpenBytesDistinctObjects(t *testing.T) {
	c := findOrSkip(t)
	sos := [][]byte{constLib(t, c, 1), constLib(t, c, 2), constLib(t, c, 3)}
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) {
			withMode(t, m.off)
			var libs []*Library
			defer func() {
				for _, l := range libs {
					l.Close()
				}
			}()
			for round := 0; round < 4; round++ {
				for i, so := range sos {
					lib, err := OpenBytes(so)
					if err != nil {
						t.Fatal(err)
					}
					libs = append(libs, lib)
					if got := callVal(t, lib); got != int32(i+1) {
						t.Fatalf("round %d: object %d (%s) ran k_val of object %d", round, i+1, lib.path, got)
					}
				}
				// Close every other one, freeing names for the next round
				// while the rest stay loaded under theirs.
				for k := 0; k < len(libs); k += 2 {
					libs[k].Close()
				}
			}
			for i, lib := range libs {
				if lib.handle != nil {
					if got := callVal(t, lib); got != int32(i%3+1) {
						t.Errorf("library %d (%s) now runs object %d's kernel", i, lib.path, got)
					}
				}
			}
		})
	}
}

func TestOpenBytesCorrupt(t *testing.T) {
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) {
			withMode(t, m.off)
			for _, data := range [][]byte{nil, []byte("this is not an ELF file"), []byte("\x7fELF\x02\x01\x01\x00truncated")} {
				lib, err := OpenBytes(data)
				if err == nil {
					lib.Close()
					t.Fatalf("%q loaded", data)
				}
				// The error says what failed, names the object as
				// opened, and carries the loader's reason.
				msg := err.Error()
				if !strings.Contains(msg, "cc: loading shared object ") || !strings.Contains(msg, "ELF") && !strings.Contains(msg, "too short") {
					t.Errorf("%q: unclear error %q", data, msg)
				}
				if l := leftovers(t); len(l) != 0 {
					t.Errorf("left behind %v", l)
				}
			}
		})
	}
}

// BenchmarkOpenBytes loads and closes a one-kernel library both ways: the
// memory file saves the directory, file and removal of the fallback.
func BenchmarkOpenBytes(b *testing.B) {
	c, err := Find(context.Background())
	if err != nil {
		b.Skipf("no C compiler: %v", err)
	}
	so, err := c.BuildShared(context.Background(), Source{Name: "k_val", Code: []byte("void k_val(void** b){ *(int*)b[0] = 1; }\n")})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range openModes {
		b.Run(m.name, func(b *testing.B) {
			if !m.off && !useMemfd() {
				b.Skip("no memory files here")
			}
			was := memfdOff
			memfdOff = m.off
			defer func() { memfdOff = was }()
			for b.Loop() {
				lib, err := OpenBytes(so)
				if err != nil {
					b.Fatal(err)
				}
				lib.Close()
			}
		})
	}
}

// TestSyms looks names up in one call: each found one at Sym's address,
// the missing ones nil, in order, and a name with a NUL byte (which would
// shift every later name) or a closed library an error.
func TestSyms(t *testing.T) {
	c := findOrSkip(t)
	src := Source{Name: "k_a", Code: []byte("#include <stdint.h>\nvoid k_a(void** b){}\nvoid k_a_par(void** b, int64_t t, int64_t n){}\nconst int64_t k_a_parts = 4;\nvoid k_b(void** b){}\n")}
	so, err := c.BuildShared(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := OpenBytes(so)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"k_a", "k_a_par", "k_a_parts", "k_b", "k_b_par", "", "k_a"}
	got, err := lib.Syms(names)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) {
		t.Fatalf("%d addresses for %d names", len(got), len(names))
	}
	for i, n := range names {
		want, err := lib.Sym(n)
		if err != nil {
			want = nil
		}
		if got[i] != want {
			t.Errorf("Syms[%d] (%q) = %p, Sym = %p", i, n, got[i], want)
		}
	}
	if got[4] != nil || got[0] == nil || got[0] == got[3] {
		t.Errorf("addresses %v: want k_a and k_b distinct, k_b_par nil", got)
	}
	if *(*int64)(got[2]) != 4 {
		t.Errorf("k_a_parts reads %d, want 4", *(*int64)(got[2]))
	}
	if _, err := lib.Syms([]string{"k_a", "k\x00b", "k_b"}); err == nil {
		t.Error("a name with a NUL byte: no error")
	}
	if ps, err := lib.Syms(nil); err != nil || ps != nil {
		t.Errorf("no names: %v, %v", ps, err)
	}
	lib.Close()
	if _, err := lib.Syms([]string{"k_a"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("closed library: %v, want an error saying so", err)
	}
}
