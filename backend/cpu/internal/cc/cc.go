// Package cc drives the system C compiler for the cpu backend: it finds the
// compiler, describes it precisely enough to key cached objects on, compiles
// generated C to objects, links objects into a shared library, and loads the
// library with dlopen.
//
// Everything that can change the machine code (compiler path and version,
// target triple, flags, and — because -march=native is used — the CPU model
// and features) is part of Identity, so an object or library is never reused
// where it could compute something different or fault on an illegal
// instruction.
package cc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
)

// EnvCC names the environment variable that overrides the C compiler.
const EnvCC = config.EnvCC

// baseFlags are always passed when compiling kernels. -fwrapv gives signed
// integer overflow the two's-complement wrap StableHLO specifies;
// -fno-math-errno lets sqrt and friends vectorize without changing results;
// -ffast-math is deliberately absent because NaN and signed-zero semantics
// are observable in StableHLO programs. An implicitly declared function
// would silently return int, so it is an error.
// -fno-tree-loop-distribute-patterns keeps copy and fill loops as loops
// instead of memmove/memset calls: a kernel's copies are row runs of a
// few hundred bytes, which the vectorized loop moves without a call, and
// a library that calls nothing outside itself links without libc and libm
// (see link.go).
var baseFlags = []string{"-std=gnu11", "-O3", "-fPIC", "-fwrapv", "-fno-math-errno", "-fno-semantic-interposition", "-fno-tree-loop-distribute-patterns", "-Werror=implicit-function-declaration"}

// Compiler is a located and probed C compiler.
type Compiler struct {
	// Path is the resolved absolute path of the compiler executable.
	Path string
	// Version is the first line of `cc --version`.
	Version string
	// Target is the output of `cc -dumpmachine`.
	Target string
	// Flags are the code-affecting flags used for every kernel object.
	Flags []string
	// CPU describes the host processor; it is part of Identity because
	// Flags may include -march=native.
	CPU CPUInfo

	// linking is how Link links (see link.go).
	linking linkState
}

var (
	findMu    sync.Mutex
	findCache = map[string]*Compiler{}
)

// Find locates the C compiler named by XLACACHE_CC (default "cc"), probes
// its identity, and checks that it can build a shared object. Results are
// memoized per compiler name for the life of the process: probing runs the
// compiler several times.
func Find(ctx context.Context) (*Compiler, error) {
	name := os.Getenv(EnvCC)
	if name == "" {
		name = "cc"
	}
	findMu.Lock()
	defer findMu.Unlock()
	if c, ok := findCache[name]; ok {
		return c, nil
	}
	c, err := probeMemo(ctx, name)
	if err != nil {
		return nil, err
	}
	findCache[name] = c
	return c, nil
}

// probeMemo avoids re-probing an unchanged compiler in every new process:
// the probe runs the compiler three times, which would otherwise dominate
// a warm start. The memo file is keyed by everything that identifies the
// compiler binary (resolved path, size, modification time, inode) and lives
// in its own directory beside, not inside, the default cache directory
// (see memoDir); any problem with it just means probing.
func probeMemo(ctx context.Context, name string) (*Compiler, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("cc: C compiler %q not found (set %s to a working compiler): %w", name, EnvCC, err)
	}
	real, memo, ok := memoFile(path)
	if !ok {
		return probe(ctx, name)
	}
	if c, err := readMemo(memo, real); err == nil {
		c.CPU = DetectCPU()
		return c, nil
	}
	c, err := probe(ctx, name)
	if err != nil {
		return nil, err
	}
	if c.Path == real {
		_ = writeMemo(memo, c) // best effort: the next process probes again
	}
	return c, nil
}

// memoDirName is the probe memo directory under the user cache directory.
// It must stay outside <user cache dir>/xlacache, the CLI's default cache
// directory: every process probes, including reader-role ones, which must
// not write into the cache.
const memoDirName = "xlacache-ccprobe"

// maxMemoSize bounds what a memo read allocates; real memos are a few
// hundred bytes.
const maxMemoSize = 64 << 10

// memoDir returns where probe memos live.
func memoDir() (string, error) {
	ucd, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(ucd, memoDirName), nil
}

// memoFile resolves the compiler at path and returns its resolved path and
// the memo file for it, keyed by the binary's identity and baseFlags.
func memoFile(path string) (real, memo string, ok bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", "", false
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", "", false
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", "", false
	}
	dir, err := memoDir()
	if err != nil {
		return "", "", false
	}
	id := fmt.Sprintf("%s|%d|%d|%v|%s", real, st.Size(), st.ModTime().UnixNano(), inode(st), strings.Join(baseFlags, " "))
	return real, filepath.Join(dir, Hash([]byte(id))[:32]+".json"), true
}

// memoRecord is what a memo file holds. The CPU is not stored: it is
// detected afresh, since the memo directory may be shared across machines
// (a synced home directory).
type memoRecord struct {
	Path    string
	Version string
	Target  string
	Flags   []string
}

// readMemo reads and validates the memo at path for the compiler at real.
// Only a regular file no larger than maxMemoSize is read.
func readMemo(path, real string) (*Compiler, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxMemoSize {
		return nil, fmt.Errorf("cc: probe memo %s: not a regular file of at most %d bytes", path, maxMemoSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := decodeMemo(data, real)
	if err != nil {
		return nil, fmt.Errorf("cc: probe memo %s: %w", path, err)
	}
	return c, nil
}

// decodeMemo parses a memo for the compiler at real. The memo is untrusted
// input (anyone who can write the user's cache directory can edit it) and
// its Flags reach the compiler's command line, so it is accepted only when
// it is exactly what probe can produce: the same path, printable one-line
// version and target, and baseFlags with or without -march=native.
func decodeMemo(data []byte, real string) (*Compiler, error) {
	if len(data) > maxMemoSize {
		return nil, fmt.Errorf("memo larger than %d bytes", maxMemoSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m memoRecord
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decoding memo: %w", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after memo")
	}
	switch {
	case m.Path != real:
		return nil, fmt.Errorf("memo is for compiler %q, not %q", m.Path, real)
	case m.Version == "" || !printableLine(m.Version, 512):
		return nil, fmt.Errorf("invalid compiler version %q", m.Version)
	case !printableLine(m.Target, 256):
		return nil, fmt.Errorf("invalid compiler target %q", m.Target)
	case !probedFlags(m.Flags):
		return nil, fmt.Errorf("unexpected compiler flags %q", m.Flags)
	}
	return &Compiler{Path: m.Path, Version: m.Version, Target: m.Target, Flags: append([]string(nil), m.Flags...)}, nil
}

// printableLine reports whether s is at most maxLen bytes of valid UTF-8
// without control characters.
func printableLine(s string, maxLen int) bool {
	if len(s) > maxLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// probedFlags reports whether flags are ones probe produces.
func probedFlags(flags []string) bool {
	if len(flags) < len(baseFlags) || len(flags) > len(baseFlags)+1 {
		return false
	}
	for i, f := range baseFlags {
		if flags[i] != f {
			return false
		}
	}
	return len(flags) == len(baseFlags) || flags[len(baseFlags)] == "-march=native"
}

// writeMemo stores c's probe results at path atomically
// (atomicfile.Replace), so a concurrent reader sees the old memo, the new
// one, or none, never a torn one.
func writeMemo(path string, c *Compiler) error {
	data, err := json.Marshal(memoRecord{Path: c.Path, Version: c.Version, Target: c.Target, Flags: c.Flags})
	if err != nil {
		return err
	}
	if err := atomicfile.Replace(path, data, atomicfile.Options{Perm: 0o600, DirPerm: 0o700}); err != nil {
		return fmt.Errorf("cc: writing probe memo %s: %w", path, err)
	}
	return nil
}

func probe(ctx context.Context, name string) (*Compiler, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("cc: C compiler %q not found (set %s to a working compiler): %w", name, EnvCC, err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	c := &Compiler{Path: path, CPU: DetectCPU()}
	out, err := c.run(ctx, "", "--version")
	if err != nil {
		return nil, fmt.Errorf("cc: probing %s --version: %w", path, err)
	}
	c.Version = strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	out, err = c.run(ctx, "", "-dumpmachine")
	if err != nil {
		return nil, fmt.Errorf("cc: probing %s -dumpmachine: %w", path, err)
	}
	c.Target = strings.TrimSpace(out)
	c.Flags = append([]string(nil), baseFlags...)
	// -march=native is worth a lot for the matrix kernels, but not every
	// compiler/target accepts it; keep it only when a trial compile works.
	if c.tryFlag(ctx, "-march=native") {
		c.Flags = append(c.Flags, "-march=native")
	}
	return c, nil
}

// tryFlag reports whether the compiler accepts flag on a trivial file.
func (c *Compiler) tryFlag(ctx context.Context, flag string) bool {
	dir, err := os.MkdirTemp("", "xlacache-ccprobe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(src, []byte("int xlacache_probe(int x) { return x + 1; }\n"), 0o600); err != nil {
		return false
	}
	_, err = c.run(ctx, dir, flag, "-c", "probe.c", "-o", "probe.o")
	return err == nil
}

// run executes the compiler in dir and returns its stdout; on failure the
// error carries the compiler's stderr, which is what a user needs to see.
func (c *Compiler) run(ctx context.Context, dir string, args ...string) (string, error) {
	return runProgram(ctx, c.Path, dir, args...)
}

// runProgram executes the program at path in dir, as run does.
func runProgram(ctx context.Context, path, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// A compiler must not pick up the caller's locale or stray flags that
	// would change its output without being part of the identity.
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// Killed because the caller gave up: say so, not "signal:
			// killed", so that callers can tell it from a failure.
			return "", fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), cerr)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		if len(msg) > 4000 {
			msg = msg[:4000] + "\n... (truncated)"
		}
		if msg == "" {
			return "", fmt.Errorf("%s %s: %w", path, strings.Join(args, " "), err)
		}
		return "", fmt.Errorf("%s %s: %w\n%s", path, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// Identity is the text that names everything about this compiler that can
// change generated machine code. It is a key component of every cached
// object, autotuning result and executable built with it.
func (c *Compiler) Identity() string {
	return fmt.Sprintf("cc=%s\nversion=%s\ntarget=%s\nflags=%s\ncpu=%s\n",
		c.Path, c.Version, c.Target, strings.Join(c.Flags, " "), c.CPU.Key())
}

// Source is one kernel translation unit.
type Source struct {
	// Name is the kernel's symbol; errors name it.
	Name string
	// Code is the complete C source.
	Code []byte
	// Opt, when not empty, is the optimization level the source is
	// compiled at instead of the -O3 of Flags: one of Levels, a level
	// and flags separated by spaces ("-O2", "-O2 -fvect-cost-model=cheap").
	// Callers that cache the object must key it on Opt too
	// (Compiler.Identity holds only Flags).
	Opt string
}

// Levels are the optimization levels Source.Opt may ask for instead of
// the default -O3. The cpu backend compiles the kernels it does not tune
// at cheaper levels (backend/cpu/batch.go, kernelOpt); each is a fixed
// string here, never caller text, since it reaches the compiler's command
// line.
//
// The two multi-flag levels keep what the generated kernels need from
// -O3 at less compile time:
//   - "-O2 -fvect-cost-model=cheap": -O2 with the loop vectorizer allowed
//     to add epilogues and alias checks (-O2's own "very-cheap" model
//     refuses them, which leaves the plain dot loops scalar, 6x slower);
//     it skips -O3's extra loop transformations (peeling, unswitching,
//     distribution, versioning by cost) and its costlier cost model.
//   - "-O1 -fexpensive-optimizations -ftree-loop-vectorize": for code
//     already written with explicit vector types (register-blocked
//     convolutions): -fexpensive-optimizations keeps the multiply-add
//     contraction into FMAs that -O2 and -O3 do (so the bits match
//     theirs), -ftree-loop-vectorize the gather loops' vectorization.
var Levels = []string{"-O1", "-O2", LevelVectorize, LevelVectorCode}

// Named multi-flag levels (see Levels).
const (
	// LevelVectorize is -O2 with the loop vectorizer's cheap cost model.
	LevelVectorize = "-O2 -fvect-cost-model=cheap"
	// LevelVectorCode is -O1 with FMA contraction and the loop
	// vectorizer, for code written with explicit vector types.
	LevelVectorCode = "-O1 -fexpensive-optimizations -ftree-loop-vectorize"
)

// validOpt reports whether opt is one of Levels, or empty (-O3).
// Anything else would reach the compiler's command line.
func validOpt(opt string) bool {
	return opt == "" || slices.Contains(Levels, opt)
}

// flagsFor is the compiler flags for a source at optimization level opt:
// Flags with its -O3 replaced by opt's flags when opt is not empty.
func (c *Compiler) flagsFor(opt string) []string {
	if opt == "" {
		return slices.Clone(c.Flags)
	}
	flags := make([]string, 0, len(c.Flags)+2)
	for _, f := range c.Flags {
		if f == "-O3" {
			flags = append(flags, strings.Fields(opt)...)
			continue
		}
		flags = append(flags, f)
	}
	return flags
}

// Object is a compiled kernel.
type Object struct {
	Name string
	Data []byte
}

// CompileError is returned when the compiler rejects a kernel. It names the
// kernels of the failing invocation and carries the compiler's output.
type CompileError struct {
	Kernels []string
	Err     error
}

// Error names the kernels and carries the compiler's output.
func (e *CompileError) Error() string {
	return fmt.Sprintf("cc: compiling kernel(s) %s: %v", strings.Join(e.Kernels, ", "), e.Err)
}

// Unwrap returns the underlying process error.
func (e *CompileError) Unwrap() error { return e.Err }

// Compile compiles each source to an object file, running up to jobs
// compiler invocations at once. With several jobs, a few sources (at most
// 4 per job, what callers that batch their kernels pass) get an
// invocation each, started largest first, so that whichever compiler is
// free takes the next: a unit's cost varies with its kernels far more
// than a driver process costs. Many sources share invocations instead:
// each contiguous run of one optimization level (Opt) is split into its
// share of jobs groups.
// The result is in the order of srcs. Every source still costs the
// compiler its own cc1 and assembler processes; callers that compile many
// small functions put them into few sources.
func (c *Compiler) Compile(ctx context.Context, srcs []Source, jobs int) ([]Object, error) {
	if len(srcs) == 0 {
		return nil, nil
	}
	jobs = min(max(jobs, 1), len(srcs))
	c.PrepareLink(ctx)
	for _, s := range srcs {
		if !validSymbol(s.Name) {
			return nil, fmt.Errorf("cc: invalid kernel name %q", s.Name)
		}
		if !validOpt(s.Opt) {
			return nil, fmt.Errorf("cc: kernel %s: invalid optimization level %q", s.Name, s.Opt)
		}
	}
	dir, err := os.MkdirTemp("", "xlacache-cc-")
	if err != nil {
		return nil, fmt.Errorf("cc: creating work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	files := make([]string, len(srcs))
	for i, s := range srcs {
		files[i] = fmt.Sprintf("s%d_%s.c", i, s.Name)
		if err := os.WriteFile(filepath.Join(dir, files[i]), s.Code, 0o600); err != nil {
			return nil, fmt.Errorf("cc: writing source of kernel %s: %w", s.Name, err)
		}
	}
	groups := compileGroups(srcs, jobs)
	errs := make([]error, len(groups))
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for j, g := range groups {
		// Taken here, not in the goroutine, so that the groups start in
		// their order.
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			args := append(c.flagsFor(srcs[g.lo].Opt), "-pipe", "-c")
			args = append(args, files[g.lo:g.hi]...)
			if _, err := c.run(ctx, dir, args...); err != nil {
				names := make([]string, 0, g.hi-g.lo)
				for _, s := range srcs[g.lo:g.hi] {
					names = append(names, s.Name)
				}
				errs[j] = &CompileError{Kernels: names, Err: err}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	objs := make([]Object, len(srcs))
	for i, s := range srcs {
		data, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(files[i], ".c")+".o"))
		if err != nil {
			return nil, &CompileError{Kernels: []string{s.Name}, Err: fmt.Errorf("compiler produced no object: %w", err)}
		}
		objs[i] = Object{Name: s.Name, Data: data}
	}
	return objs, nil
}

// group is the sources srcs[lo:hi] of one compiler invocation.
type group struct{ lo, hi int }

// compileGroups splits srcs into the groups of one compiler invocation
// each, in the order they are to start (see Compile): one per source,
// largest first, for at most 4 sources per job of several (one job gains
// nothing from a driver process per source); else contiguous groups of
// one optimization level each, every run of equal Opt getting its share of
// jobs groups (at least one), cut evenly by count.
func compileGroups(srcs []Source, jobs int) []group {
	var out []group
	if jobs > 1 && len(srcs) <= 4*jobs {
		for i := range srcs {
			out = append(out, group{i, i + 1})
		}
		slices.SortStableFunc(out, func(a, b group) int { return len(srcs[b.lo].Code) - len(srcs[a.lo].Code) })
		return out
	}
	for lo := 0; lo < len(srcs); {
		hi := lo + 1
		for hi < len(srcs) && srcs[hi].Opt == srcs[lo].Opt {
			hi++
		}
		n := min(max(jobs*(hi-lo)/len(srcs), 1), hi-lo)
		for j := range n {
			out = append(out, group{lo + j*(hi-lo)/n, lo + (j+1)*(hi-lo)/n})
		}
		lo = hi
	}
	return out
}

// Link links objects into one shared library and returns its bytes. It
// runs the linker itself where it can (see link.go), else the driver.
func (c *Compiler) Link(ctx context.Context, objs []Object) ([]byte, error) {
	dir, err := os.MkdirTemp("", "xlacache-ld-")
	if err != nil {
		return nil, fmt.Errorf("cc: creating link directory: %w", err)
	}
	defer os.RemoveAll(dir)
	files := make([]string, len(objs))
	for i, o := range objs {
		files[i] = fmt.Sprintf("o%d.o", i)
		if err := os.WriteFile(filepath.Join(dir, files[i]), o.Data, 0o600); err != nil {
			return nil, fmt.Errorf("cc: writing object of kernel %s: %w", o.Name, err)
		}
	}
	if err := c.linkFiles(ctx, dir, files, selfContained(objs)); err != nil {
		return nil, fmt.Errorf("cc: linking %d kernel objects: %w", len(objs), err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "lib.so"))
	if err != nil {
		return nil, fmt.Errorf("cc: reading linked library: %w", err)
	}
	return data, nil
}

// linkFiles links the objects files in dir into dir/lib.so: directly where
// c has a direct linker, by the driver where it has none or the direct
// link fails (the first failure switches c to the driver for good, so a
// linker that cannot link these objects costs one try, not one per link).
// A direct link of selfContained objects (see link.go) leaves out the
// libraries.
func (c *Compiler) linkFiles(ctx context.Context, dir string, files []string, selfContained bool) error {
	if l := c.directLinker(ctx); l != nil {
		err := l.linkDirect(ctx, dir, files, selfContained)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		c.linking.broken.Store(true)
		slog.Debug("cc: linking through the compiler driver from now on", "err", err)
	}
	args := append([]string{"-shared", "-fPIC", "-o", "lib.so"}, files...)
	_, err := c.run(ctx, dir, append(args, "-lm")...)
	return err
}

// BuildLibrary compiles srcs and links them straight into a shared library
// (two steps: objects, then one link).
func (c *Compiler) BuildLibrary(ctx context.Context, srcs []Source, jobs int) ([]byte, error) {
	objs, err := c.Compile(ctx, srcs, jobs)
	if err != nil {
		return nil, err
	}
	return c.Link(ctx, objs)
}

// BuildShared compiles one translation unit straight into a shared library
// in a single compiler invocation (compile and link together). The
// autotuner builds and caches one such library per kernel, so a set of
// cached candidate libraries needs neither the compiler nor the linker.
func (c *Compiler) BuildShared(ctx context.Context, src Source) ([]byte, error) {
	if !validSymbol(src.Name) {
		return nil, fmt.Errorf("cc: invalid kernel name %q", src.Name)
	}
	if !validOpt(src.Opt) {
		return nil, fmt.Errorf("cc: kernel %s: invalid optimization level %q", src.Name, src.Opt)
	}
	dir, err := os.MkdirTemp("", "xlacache-cc-")
	if err != nil {
		return nil, fmt.Errorf("cc: creating work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	file := src.Name + ".c"
	if err := os.WriteFile(filepath.Join(dir, file), src.Code, 0o600); err != nil {
		return nil, fmt.Errorf("cc: writing source of kernel %s: %w", src.Name, err)
	}
	args := append(c.flagsFor(src.Opt), "-pipe", "-shared", "-o", "lib.so", file, "-lm")
	if _, err := c.run(ctx, dir, args...); err != nil {
		return nil, &CompileError{Kernels: []string{src.Name}, Err: err}
	}
	data, err := os.ReadFile(filepath.Join(dir, "lib.so"))
	if err != nil {
		return nil, &CompileError{Kernels: []string{src.Name}, Err: fmt.Errorf("compiler produced no shared object: %w", err)}
	}
	return data, nil
}

// validSymbol reports whether name is a plain C identifier, which also makes
// it safe as part of a file name.
func validSymbol(name string) bool {
	if name == "" || len(name) > 200 {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Hash returns a short hex digest used to name things by content.
func Hash(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}
