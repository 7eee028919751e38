// Package pjrt is xlacache's executable tier for every PJRT client: a
// PJRT plugin of its own (C, in csrc/wrapper.c) that wraps a real one and
// routes compilation through the cache, and the helper (Server) that
// holds the cache's rules for it.
//
// A PJRT host (go-xla, GoMLX, JAX, a C++ program) loads the wrapper in
// place of the real plugin. The wrapper loads the real ("inner") plugin,
// hands back its API table with PJRT_Client_Compile replaced, and on each
// compile asks the helper, over a unix socket, what to do: load a cached
// executable (through the inner PJRT_Executable_DeserializeAndLoad, then
// probed) or compile through the inner plugin and send the serialized
// result back to be stored. The wrapper must be C: a process cannot hold
// two Go runtimes, and the host may not be Go at all. The cache's rules
// stay in Go, in one place, because the helper runs the ordinary
// cache.Compile with a backend whose Load and Compile the wrapper performs.
//
// Build compiles the wrapper with the system C compiler; Layout places it
// under the inner plugin's names; Env returns the environment that makes
// a host load it. `xlacache pjrt env --plugin PATH` prints that
// environment, `xlacache pjrt serve` runs the helper (the wrapper also
// starts one on demand). See docs/pjrt.md.
package pjrt

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

//go:embed csrc/wrapper.c
var wrapperSource []byte

//go:embed csrc/pjrt_c_api.h
var apiHeader []byte

// Environment variables the wrapper reads.
const (
	// EnvInner is the absolute path of the real plugin the wrapper loads.
	EnvInner = "XLACACHE_PJRT_INNER"
	// EnvSocket is the helper's unix socket.
	EnvSocket = "XLACACHE_PJRT_SOCKET"
	// EnvHelper is the xlacache binary the wrapper starts as
	// `xlacache pjrt serve` when nobody listens on the socket (unset:
	// compile without the cache).
	EnvHelper = "XLACACHE_PJRT_HELPER"
	// EnvIdle is how long a helper the wrapper started waits without a
	// request before it exits (a Go duration; default 10m).
	EnvIdle = "XLACACHE_PJRT_IDLE"
	// EnvTimeoutMS bounds every wait of the wrapper on the helper, in
	// milliseconds (default 10000); heartbeats restart it.
	EnvTimeoutMS = "XLACACHE_PJRT_TIMEOUT_MS"
	// EnvTrace names a file the wrapper appends one line per compile to
	// ("<pid> compile|hit|fallback"), for tests and benchmarks.
	EnvTrace = "XLACACHE_PJRT_TRACE"
)

// WrapperFile is the file name Build gives the compiled wrapper.
const WrapperFile = "libxlacache_pjrt.so"

// Build compiles the wrapper with cc into dir (created when missing), in a
// subdirectory named after a hash of the wrapper's source, the PJRT header
// and the compiler's identity, and returns the library's path. A wrapper
// already built for the same hash is reused; a new one is written through
// a temporary file and a rename, so concurrent builds are safe.
func Build(ctx context.Context, dir, cc string) (string, error) {
	if cc == "" {
		cc = "cc"
		if env := os.Getenv("CC"); env != "" {
			cc = env
		}
	}
	ver, err := exec.CommandContext(ctx, cc, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("C compiler %s: %w", cc, err)
	}
	h := sha256.New()
	for _, part := range [][]byte{wrapperSource, apiHeader, []byte(cc), ver, []byte(strings.Join(ccFlags, " "))} {
		fmt.Fprintf(h, "%d\n", len(part))
		h.Write(part)
	}
	sub := filepath.Join(dir, "wrapper-"+hex.EncodeToString(h.Sum(nil))[:16])
	out := filepath.Join(sub, WrapperFile)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return "", fmt.Errorf("wrapper build directory: %w", err)
	}
	src, err := os.MkdirTemp(sub, ".tmp-src-")
	if err != nil {
		return "", fmt.Errorf("wrapper build: %w", err)
	}
	defer os.RemoveAll(src)
	if err := os.WriteFile(filepath.Join(src, "wrapper.c"), wrapperSource, 0o644); err != nil {
		return "", fmt.Errorf("wrapper build: %w", err)
	}
	if err := os.WriteFile(filepath.Join(src, "pjrt_c_api.h"), apiHeader, 0o644); err != nil {
		return "", fmt.Errorf("wrapper build: %w", err)
	}
	tmp := filepath.Join(src, WrapperFile)
	args := append(append([]string{}, ccFlags...), "-o", tmp, filepath.Join(src, "wrapper.c"), "-ldl", "-lpthread")
	cmd := exec.CommandContext(ctx, cc, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("compiling the PJRT wrapper with %s: %w: %s", cc, err, strings.TrimSpace(stderr.String()))
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("wrapper build: %w", err)
	}
	return out, nil
}

// ccFlags build the wrapper: a shared object exporting only GetPjrtApi and
// xlacache_pjrt_counters.
var ccFlags = []string{"-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-std=c11", "-Wall"}

var reGoXLAName = regexp.MustCompile(`^(?:pjrt_c_api_(.+)_plugin|pjrt[-_]plugin[-_](.+))\.so$`)

// PluginName is the name go-xla and GoMLX would ask for to find the plugin
// at path: "cpu" for pjrt_c_api_cpu_plugin.so. A file not named the way
// go-xla searches ("xla_cpu_pjrt.so") gets "cpu" when its name says cpu,
// else "" (the caller must name it).
func PluginName(path string) string {
	base := filepath.Base(path)
	if m := reGoXLAName.FindStringSubmatch(base); m != nil {
		if m[1] != "" {
			return m[1]
		}
		return m[2]
	}
	if strings.Contains(strings.ToLower(base), "cpu") {
		return "cpu"
	}
	return ""
}

// Layout makes a directory, under dir, in which the wrapper stands under
// the inner plugin's own file name and under go-xla's name for it
// (pjrt_c_api_<name>_plugin.so), so that a host searching a plugin by
// name finds the wrapper. It returns the directory and the path of the
// wrapper under go-xla's name. The directory is keyed by the inner path,
// the wrapper and the name; its entries are symbolic links to wrapper.
func Layout(dir, wrapper, inner, name string) (string, string, error) {
	if name == "" {
		return "", "", fmt.Errorf("no plugin name for %s: give one (e.g. cpu)", inner)
	}
	if strings.ContainsAny(name, "/\x00") {
		return "", "", fmt.Errorf("plugin name %q: must be a file name part", name)
	}
	h := sha256.Sum256([]byte(inner + "\x00" + wrapper + "\x00" + name))
	d := filepath.Join(dir, "plugins-"+hex.EncodeToString(h[:])[:16])
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", "", fmt.Errorf("plugin directory: %w", err)
	}
	goName := "pjrt_c_api_" + name + "_plugin.so"
	for _, n := range []string{goName, filepath.Base(inner)} {
		p := filepath.Join(d, n)
		if cur, err := os.Readlink(p); err == nil && cur == wrapper {
			continue
		}
		tmp := p + ".tmp-" + fmt.Sprint(os.Getpid())
		os.Remove(tmp)
		if err := os.Symlink(wrapper, tmp); err != nil {
			return "", "", fmt.Errorf("plugin directory: %w", err)
		}
		if err := os.Rename(tmp, p); err != nil {
			return "", "", fmt.Errorf("plugin directory: %w", err)
		}
	}
	return d, filepath.Join(d, goName), nil
}

// Setup describes a wrapper made ready for one inner plugin.
type Setup struct {
	// Dir is the directory holding the wrapper under the plugin's names
	// (for PJRT_PLUGIN_LIBRARY_PATH).
	Dir string
	// Wrapper is the wrapper's path under go-xla's name for the plugin.
	Wrapper string
	// Name is the plugin's name ("cpu").
	Name string
	// Inner is the real plugin's absolute path.
	Inner string
	// Socket is the helper's socket; Helper the binary that serves it.
	Socket, Helper string
}

// Prepare builds the wrapper (into buildDir) and lays it out for the inner
// plugin at inner, named name (PluginName(inner) when empty).
func Prepare(ctx context.Context, buildDir, inner, name, socket, helper string) (Setup, error) {
	abs, err := filepath.Abs(inner)
	if err != nil {
		return Setup{}, fmt.Errorf("inner plugin: %w", err)
	}
	if st, err := os.Stat(abs); err != nil {
		return Setup{}, fmt.Errorf("inner plugin: %w", err)
	} else if st.IsDir() {
		return Setup{}, fmt.Errorf("inner plugin %s is a directory", abs)
	}
	if name == "" {
		name = PluginName(abs)
	}
	w, err := Build(ctx, buildDir, "")
	if err != nil {
		return Setup{}, err
	}
	d, wp, err := Layout(buildDir, w, abs, name)
	if err != nil {
		return Setup{}, err
	}
	return Setup{Dir: d, Wrapper: wp, Name: name, Inner: abs, Socket: socket, Helper: helper}, nil
}

// Env returns the environment, in order, that makes a PJRT host load the
// wrapper: go-xla and GoMLX search PJRT_PLUGIN_LIBRARY_PATH by name, JAX
// reads PJRT_NAMES_AND_LIBRARY_PATHS.
func (s Setup) Env() [][2]string {
	env := [][2]string{
		{"PJRT_PLUGIN_LIBRARY_PATH", s.Dir},
		{"PJRT_NAMES_AND_LIBRARY_PATHS", s.Name + ":" + s.Wrapper},
		{EnvInner, s.Inner},
		{EnvSocket, s.Socket},
	}
	if s.Helper != "" {
		env = append(env, [2]string{EnvHelper, s.Helper})
	}
	return env
}

// DefaultSocket is the helper socket for the cache directory dir: in
// $XDG_RUNTIME_DIR when set (a per-user, owner-only tmpfs), else in an
// owner-only xlacache-<uid> directory of the temporary directory (not in
// the cache directory, whose every file xlacache's layout accounts for);
// named by a hash of dir so each cache directory has its own helper.
func DefaultSocket(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	h := sha256.Sum256([]byte(abs))
	name := "xlacache-pjrt-" + hex.EncodeToString(h[:])[:12] + ".sock"
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		return filepath.Join(rt, name)
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("xlacache-%d", os.Getuid()), name)
}

// RoleSocket is the helper socket for processes of one role on the cache
// directory dir: DefaultSocket for writers, beside it a "-reader" one for
// readers. A helper's role is fixed when it opens the cache (cache.Compile
// stores only on a writer's cache), and a helper started on demand takes
// its role from the environment of the process that started it; so each
// role has its own socket and helper, and a reader process never reaches
// a helper that writes.
func RoleSocket(dir string, writer bool) string {
	s := DefaultSocket(dir)
	if writer {
		return s
	}
	return strings.TrimSuffix(s, ".sock") + "-reader.sock"
}
