package cc

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Linking kernel objects without the compiler driver.
//
// `cc -shared -o lib.so a.o b.o -lm` runs three programs (the driver,
// collect2, ld), and ld then reads the C runtime's start files, libgcc_s
// and the libm.so linker script; for the two small objects of an untuned
// build that cost 21 ms on the development VM, a sixth of a whole compile.
// The kernels need none of the start files (no constructors, no C++ EH
// registration), so Link runs the linker the driver would run, on the
// objects and the three libraries they can call: libm.so.6 and libc.so.6
// (so that references are versioned and the library names what it needs,
// exactly as a driver link) and libgcc.a (helpers such as __divti3 or the
// half-precision conversions). That takes 8 ms with gold, 13 ms with
// GNU ld, for the same two objects.
//
// Objects that reference nothing outside themselves (most untuned
// builds: the prelude inlines its exp and tanh, and kernels call libm only
// for rarer functions) are linked without the three libraries: nothing in
// them would be used (--as-needed drops an unused library's DT_NEEDED,
// and only a referenced libgcc.a member is pulled in), and reading
// libc.so.6's and libm.so.6's symbol tables is half of gold's 10 ms. The
// library's code and exports are those of a link with them.
//
// Where any part cannot be found (a driver that does not print its
// search directories, a system without ld), or the direct link ever
// fails, Link uses the driver as before.

// linkerNames are the linkers looked for, in order: gold reads libc.so.6's
// symbol table in about half the time GNU ld does.
var linkerNames = []string{"ld.gold", "ld"}

// linkLibs are what a kernel library links against, found in the
// driver's library directories.
var linkLibs = []string{"libm.so.6", "libc.so.6", "libgcc.a"}

// linkFlags are the linker flags of a direct link: those the driver
// passes for -shared, less its start files and default libraries.
var linkFlags = []string{"-shared", "--eh-frame-hdr", "--hash-style=gnu", "-z", "relro", "-z", "noexecstack"}

// directLink is a linker and the libraries to link kernels against.
type directLink struct {
	ld   string
	libs []string
}

// linkState is a Compiler's direct-link probe, made on first use.
type linkState struct {
	started sync.Once // PrepareLink's goroutine
	once    sync.Once // the probe
	link    *directLink
	broken  atomic.Bool // a direct link failed; the driver links from then on
}

// PrepareLink starts what the first Link needs, the direct linker's probe,
// in the background (once per Compiler), so that it overlaps the work
// before that link: Compile calls it, and so does a caller about to link
// objects it did not compile (a compile whose objects all come from a
// cache).
func (c *Compiler) PrepareLink(ctx context.Context) {
	c.linking.started.Do(func() { go c.directLinker(ctx) })
}

// directLinker returns c's direct linker, probing for it on first use
// (one `cc -print-search-dirs`), or nil where the driver must link.
func (c *Compiler) directLinker(ctx context.Context) *directLink {
	c.linking.once.Do(func() {
		if runtime.GOOS != "linux" {
			return
		}
		// The probe's outcome is remembered for the Compiler's life, so a
		// caller's cancellation must not decide it; a bound keeps a hung
		// driver from holding every later link.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		out, err := c.run(pctx, "", "-print-search-dirs")
		if err != nil {
			return
		}
		c.linking.link = parseSearchDirs(out, exec.LookPath)
	})
	if c.linking.broken.Load() {
		return nil
	}
	return c.linking.link
}

// parseSearchDirs finds the linker and linkLibs from the output of
// `cc -print-search-dirs` (GCC and Clang print the same three lines:
// "install: DIR", "programs: =DIR:DIR...", "libraries: =DIR:DIR..."),
// looking for programs as the driver's -print-prog-name does: its program
// directories first, then PATH (lookPath). It returns nil unless all are
// found.
func parseSearchDirs(out string, lookPath func(string) (string, error)) *directLink {
	var install string
	var programs, libraries []string
	for line := range strings.Lines(out) {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		// A leading '=' stands for the sysroot, empty for a native driver.
		dirs := strings.Split(strings.TrimPrefix(val, "="), ":")
		switch key {
		case "install":
			install = val
		case "programs":
			programs = dirs
		case "libraries":
			libraries = dirs
		}
	}
	if install != "" {
		libraries = append([]string{install}, libraries...)
	}
	l := &directLink{}
	for _, name := range linkerNames {
		if p := findFile(programs, name, true); p != "" {
			l.ld = p
			break
		}
		if p, err := lookPath(name); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				l.ld = abs
				break
			}
		}
	}
	if l.ld == "" {
		return nil
	}
	for _, lib := range linkLibs {
		p := findFile(libraries, lib, false)
		if p == "" {
			return nil
		}
		l.libs = append(l.libs, p)
	}
	return l
}

// findFile returns the cleaned path of the first regular file name in
// dirs (with an execute bit, if executable), or "".
func findFile(dirs []string, name string, executable bool) string {
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || (executable && st.Mode().Perm()&0o111 == 0) {
			continue
		}
		return p
	}
	return ""
}

// linkDirect links the object files named in files (in dir) into dir/lib.so
// with l, and against l's libraries unless selfContained.
func (l *directLink) linkDirect(ctx context.Context, dir string, files []string, selfContained bool) error {
	args := append(append([]string(nil), linkFlags...), "-o", "lib.so")
	args = append(args, files...)
	if !selfContained {
		args = append(args, "--as-needed")
		args = append(args, l.libs...)
	}
	if _, err := runProgram(ctx, l.ld, dir, args...); err != nil {
		return fmt.Errorf("linking without the driver: %w", err)
	}
	return nil
}

// linkerDefined are the undefined symbols an object may have that the
// linker itself defines.
var linkerDefined = map[string]bool{"_GLOBAL_OFFSET_TABLE_": true}

// selfContained reports whether objs reference no symbol that none of
// them defines (or the linker does), so that their library needs no other
// library. Anything it cannot read counts as a reference: the link then
// takes the libraries, as it always may.
func selfContained(objs []Object) bool {
	defined := map[string]bool{}
	var undefined []string
	for _, o := range objs {
		f, err := elf.NewFile(bytes.NewReader(o.Data))
		if err != nil {
			return false
		}
		syms, err := f.Symbols()
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			return false
		}
		for _, s := range syms {
			bind := elf.ST_BIND(s.Info)
			switch {
			case s.Name == "" || bind == elf.STB_LOCAL:
			case s.Section == elf.SHN_UNDEF:
				undefined = append(undefined, s.Name)
			default:
				defined[s.Name] = true
			}
		}
	}
	for _, name := range undefined {
		if !defined[name] && !linkerDefined[name] {
			return false
		}
	}
	return true
}
