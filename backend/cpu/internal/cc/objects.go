package cc

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// BuildObjectShared compiles one translation unit into a shared library
// and returns the library and the object it was linked from. The
// autotuner loads the library to time a kernel's candidates and keeps the
// object, so that the winner's machine code, the very code it timed, goes
// into the final library without a second compile (see Rename).
//
// One compiler invocation does both, as BuildShared does, keeping its
// object (-save-temps=obj: the driver writes the preprocessed text, the
// assembly and the object beside the output instead of piping them). A
// separate link of a -c object cost about 35 ms more per unit on the
// development VM. A driver that keeps no object file there gets the two
// steps instead.
func (c *Compiler) BuildObjectShared(ctx context.Context, src Source) (obj Object, so []byte, err error) {
	if !validSymbol(src.Name) {
		return Object{}, nil, fmt.Errorf("cc: invalid kernel name %q", src.Name)
	}
	if !validOpt(src.Opt) {
		return Object{}, nil, fmt.Errorf("cc: kernel %s: invalid optimization level %q", src.Name, src.Opt)
	}
	dir, err := os.MkdirTemp("", "xlacache-cc-")
	if err != nil {
		return Object{}, nil, fmt.Errorf("cc: creating work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// The source keeps BuildShared's file name (<unit>.c): tests that
	// count the compiler's invocations recognize candidate units by it.
	file := src.Name + ".c"
	if err := os.WriteFile(filepath.Join(dir, file), src.Code, 0o600); err != nil {
		return Object{}, nil, fmt.Errorf("cc: writing source of kernel %s: %w", src.Name, err)
	}
	args := append(c.flagsFor(src.Opt), "-save-temps=obj", "-shared", "-o", "lib.so", file, "-lm")
	if _, err := c.run(ctx, dir, args...); err != nil {
		return Object{}, nil, &CompileError{Kernels: []string{src.Name}, Err: err}
	}
	so, err = os.ReadFile(filepath.Join(dir, "lib.so"))
	if err != nil {
		return Object{}, nil, &CompileError{Kernels: []string{src.Name}, Err: fmt.Errorf("compiler produced no shared object: %w", err)}
	}
	// GCC names the object lib.so-<unit>.o, other drivers otherwise:
	// the one object in the directory is it.
	if objs, _ := filepath.Glob(filepath.Join(dir, "*.o")); len(objs) == 1 {
		if data, err := os.ReadFile(objs[0]); err == nil {
			return Object{Name: src.Name, Data: data}, so, nil
		}
	}
	objs, err := c.Compile(ctx, []Source{src}, 1)
	if err != nil {
		return Object{}, nil, err
	}
	if so, err = c.Link(ctx, objs); err != nil {
		return Object{}, nil, &CompileError{Kernels: []string{src.Name}, Err: err}
	}
	return objs[0], so, nil
}

// GlobalSymbols lists the global symbols an ELF object defines, sorted.
func GlobalSymbols(obj []byte) ([]string, error) {
	f, err := elf.NewFile(bytes.NewReader(obj))
	if err != nil {
		return nil, fmt.Errorf("cc: reading object: %w", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("cc: reading object's symbols: %w", err)
	}
	var out []string
	for _, s := range syms {
		bind := elf.ST_BIND(s.Info)
		if s.Section != elf.SHN_UNDEF && (bind == elf.STB_GLOBAL || bind == elf.STB_WEAK) {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// objcopyPaths memoizes, per compiler path, the objcopy that goes with
// the compiler (or why there is none).
var objcopyPaths sync.Map // compiler path -> objcopyResult

type objcopyResult struct {
	path string
	err  error
}

// objcopy finds the objcopy of the compiler's toolchain: the one the
// compiler names (-print-prog-name), else the first on PATH.
func (c *Compiler) objcopy(ctx context.Context) (string, error) {
	if r, ok := objcopyPaths.Load(c.Path); ok {
		r := r.(objcopyResult)
		return r.path, r.err
	}
	name := "objcopy"
	if out, err := c.run(ctx, "", "-print-prog-name=objcopy"); err == nil {
		if n := strings.TrimSpace(out); n != "" {
			name = n
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		err = fmt.Errorf("cc: no objcopy for %s: %w", c.Path, err)
	}
	if ctx.Err() == nil {
		objcopyPaths.Store(c.Path, objcopyResult{path, err})
	}
	return path, err
}

// Rename returns a copy of obj with the global symbols in rename (old
// name -> new name) renamed and those in local made local to the object,
// so that the linker neither exports them nor can see them clash with
// another object's. The machine code is unchanged: only the symbol table
// is rewritten (objcopy --redefine-sym, --localize-symbol). The result is
// checked: every new name defined and global, every old and localized
// name no longer global.
func (c *Compiler) Rename(ctx context.Context, obj Object, rename map[string]string, local []string) (Object, error) {
	if !validSymbol(obj.Name) {
		return Object{}, fmt.Errorf("cc: invalid object name %q", obj.Name)
	}
	tool, err := c.objcopy(ctx)
	if err != nil {
		return Object{}, err
	}
	var args []string
	olds := make([]string, 0, len(rename))
	for old := range rename {
		olds = append(olds, old)
	}
	slices.Sort(olds) // a stable command line
	for _, old := range olds {
		if !validSymbol(old) || !validSymbol(rename[old]) {
			return Object{}, fmt.Errorf("cc: renaming %q to %q: not plain C identifiers", old, rename[old])
		}
		args = append(args, "--redefine-sym", old+"="+rename[old])
	}
	for _, s := range local {
		if !validSymbol(s) {
			return Object{}, fmt.Errorf("cc: localizing %q: not a plain C identifier", s)
		}
		args = append(args, "--localize-symbol", s)
	}
	dir, err := os.MkdirTemp("", "xlacache-objcopy-")
	if err != nil {
		return Object{}, fmt.Errorf("cc: creating work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "in.o"), obj.Data, 0o600); err != nil {
		return Object{}, fmt.Errorf("cc: writing object %s: %w", obj.Name, err)
	}
	args = append(args, "in.o", "out.o")
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return Object{}, fmt.Errorf("cc: renaming symbols of %s: %w\n%s", obj.Name, err, bytes.TrimSpace(out))
	}
	data, err := os.ReadFile(filepath.Join(dir, "out.o"))
	if err != nil {
		return Object{}, fmt.Errorf("cc: reading renamed object %s: %w", obj.Name, err)
	}
	globals, err := GlobalSymbols(data)
	if err != nil {
		return Object{}, fmt.Errorf("cc: renamed object %s: %w", obj.Name, err)
	}
	for _, old := range olds {
		if _, found := slices.BinarySearch(globals, rename[old]); !found {
			return Object{}, fmt.Errorf("cc: renamed object %s does not define %s", obj.Name, rename[old])
		}
	}
	renamed := map[string]bool{}
	for _, n := range rename {
		renamed[n] = true
	}
	for _, s := range append(olds, local...) {
		if _, found := slices.BinarySearch(globals, s); found && !renamed[s] {
			return Object{}, fmt.Errorf("cc: renamed object %s still exports %s", obj.Name, s)
		}
	}
	return Object{Name: obj.Name, Data: data}, nil
}
