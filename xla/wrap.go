package xla

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/elfsym"
	"github.com/xlacache/xlacache/xla/pjrt"
)

// EnvWrap turns Prepare's executable tier (the caching PJRT wrapper) off
// when set to 0, false or off.
const EnvWrap = "XLACACHE_PJRT_WRAP"

// wrapState is the executable tier Prepare set up in this process: the
// wrapper's layout and, unless a shared helper serves it, the helper
// running in this process.
type wrapState struct {
	cancel context.CancelFunc
	done   chan error
	cache  *cache.Cache
	socket string
}

// Close stops the helper Prepare started in this process, if any, and
// closes its cache. Compiles after Close (in this process or in children
// that inherited the environment) go to the real plugin after one log line
// of the wrapper's. Close is safe on a nil or empty Prepared.
func (p *Prepared) Close() error {
	if p == nil || p.wrap == nil || p.wrap.cancel == nil {
		return nil
	}
	w := p.wrap
	p.wrap = nil
	w.cancel()
	err := <-w.done
	if w.cache != nil {
		if cerr := w.cache.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// wrapOff reports whether the environment turns the wrapper off.
func wrapOff(lookup func(string) (string, bool)) bool {
	v, _ := lookup(EnvWrap)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "off", "no":
		return true
	}
	return false
}

// isWrapper reports whether path is (a link to) xlacache's PJRT wrapper:
// a second Prepare in a process finds it where the first put it.
func isWrapper(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && filepath.Base(real) == pjrt.WrapperFile
}

// setupWrapper puts xlacache's caching PJRT wrapper in front of the plugin
// at plugin (the real one), for a go-xla / GoMLX program: it builds the
// wrapper (once per build directory), lays it out under the plugin's
// names, starts the helper (in this process, unless po.Helper names an
// xlacache binary to start as a shared one on demand), and points go-xla's
// plugin search at the wrapper. It returns a reason when it set nothing
// up; nothing in the environment has changed then.
func setupWrapper(ctx context.Context, opts config.Options, po PrepareOptions, plugin string,
	lookup func(string) (string, bool), setenv func(string, string) error, logger *slog.Logger, p *Prepared) (string, error) {
	switch {
	case po.NoWrapper || wrapOff(lookup):
		return "turned off", nil
	case plugin == "":
		return "no PJRT plugin file found", nil
	case !elfsym.DefinesFunc(plugin, "GetPjrtApi"):
		return plugin + " is not a shared object exporting GetPjrtApi", nil
	}
	name := po.PluginName
	if filepath.IsAbs(name) || strings.ContainsRune(name, '/') {
		name = ""
	}
	buildDir := po.WrapperDir
	if buildDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no directory to build the PJRT wrapper in: %w", err)
		}
		buildDir = filepath.Join(base, "xlacache-pjrt")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return "", fmt.Errorf("cache directory: %w", err)
	}
	// Build and lay out first: a missing C compiler leaves everything as
	// it was.
	socket := pjrt.RoleSocket(dir, opts.Writer())
	if po.Helper == "" {
		socket = processSocket(socket)
	}
	st, err := pjrt.Prepare(ctx, buildDir, plugin, name, socket, po.Helper)
	if err != nil {
		return "", err
	}
	var w *wrapState
	if po.Helper == "" {
		if w, err = serveInProcess(ctx, opts, socket, st.Inner, filepath.Join(buildDir, pjrt.HashMemoDir), logger); err != nil {
			return "", err
		}
	}
	// go-xla searches only PJRT_PLUGIN_LIBRARY_PATH when it is set: the
	// wrapper's directory goes first, then wherever go-xla looked before,
	// so every other plugin is still found (and the real one, by name,
	// only after the wrapper).
	search := append([]string{st.Dir}, PluginSearchPaths(lookup)...)
	env := [][2]string{
		{EnvPluginPath, strings.Join(search, ":")},
		{pjrt.EnvInner, st.Inner},
		{pjrt.EnvSocket, st.Socket},
	}
	if po.Helper != "" {
		// A helper the wrapper starts reads its options from the
		// environment it inherits.
		env = append(env, [2]string{pjrt.EnvHelper, po.Helper}, [2]string{config.EnvDir, dir})
	}
	for _, kv := range env {
		if err := setenv(kv[0], kv[1]); err != nil {
			if w != nil {
				(&Prepared{wrap: w}).Close()
			}
			return "", fmt.Errorf("set %s: %w", kv[0], err)
		}
	}
	p.Wrapper, p.Plugin, p.wrap = &st, st.Wrapper, w
	return "", nil
}

// socketSeq numbers the helpers Prepare starts in this process (one per
// plugin wrapped).
var socketSeq atomic.Int64

// processSocket is this process's own helper socket, beside the shared one
// (in the same owner-only directory), named by the process id. Sockets
// that dead processes left there are removed first.
func processSocket(shared string) string {
	dir := filepath.Dir(shared)
	sweepSockets(dir)
	return filepath.Join(dir, fmt.Sprintf("xlacache-pjrt-p%d-%d.sock", os.Getpid(), socketSeq.Add(1)))
}

// sweepSockets removes per-process helper sockets whose lock no live helper
// holds (pjrt.Listen holds it while it serves).
func sweepSockets(dir string) {
	locks, _ := filepath.Glob(filepath.Join(dir, "xlacache-pjrt-p*.sock.lock"))
	for _, l := range locks {
		f, err := os.OpenFile(l, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(strings.TrimSuffix(l, ".lock"))
			os.Remove(l)
		}
		f.Close()
	}
}

// serveInProcess opens the cache with this process's options and serves
// the wrapper's requests on socket from this process: a Go program needs
// no helper binary, and the helper has the program's own role, signing
// key and shared tier.
func serveInProcess(ctx context.Context, opts config.Options, socket, plugin, hashMemo string, logger *slog.Logger) (*wrapState, error) {
	ln, err := pjrt.Listen(socket)
	if err != nil {
		return nil, fmt.Errorf("PJRT helper socket: %w", err)
	}
	c, err := xlacache.Open(ctx, opts, logger)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("open the cache for the PJRT wrapper: %w", err)
	}
	// The helper outlives Prepare's ctx: it serves until Close.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w := &wrapState{cancel: cancel, done: make(chan error, 1), cache: c, socket: socket}
	// The plugin's hash (part of every key) is computed while the program
	// builds its first graph, not in its first compile, and kept beside
	// the wrapper's build (as trusted as the wrapper it loads) for the
	// next process.
	s := &pjrt.Server{Cache: c, Logger: logger, NormalizeOptions: NormalizeCompileOptions,
		Plugins: []string{plugin}, HashMemo: hashMemo}
	go func() {
		err := s.Serve(sctx, ln)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		w.done <- err
	}()
	return w, nil
}
