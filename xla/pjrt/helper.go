package pjrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// HashMemoDir is the directory under a build directory where plugin
// file hashes are kept (Server.HashMemo), by the in-process helper and by
// `xlacache pjrt serve` alike.
const HashMemoDir = "plugin-hashes"

// DefaultBuildDir is where `xlacache pjrt env` builds and lays out the
// wrapper when no directory is given: <user cache dir>/xlacache-pjrt.
func DefaultBuildDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "xlacache-pjrt"), nil
}

// UnknownShellError is WriteEnv's error for a shell it cannot write for.
type UnknownShellError struct{ Shell string }

// Error names the shell and the ones WriteEnv knows.
func (e UnknownShellError) Error() string {
	return fmt.Sprintf("--shell %q: want bash, sh, zsh or json", e.Shell)
}

// WriteEnv writes env, the wrapper's environment (Setup.Env and any
// more), to w for eval by shell ("bash", "sh", "zsh"), after a comment
// naming the wrapped plugin; or, for "json", as one JSON object. Values
// are quoted so that any byte string comes back unchanged.
func (s Setup) WriteEnv(w io.Writer, shell string, env [][2]string) error {
	switch shell {
	case "bash", "sh", "zsh":
		fmt.Fprintf(w, "# xlacache pjrt env: caching wrapper around %s (plugin name %q)\n", s.Inner, s.Name)
		for _, kv := range env {
			fmt.Fprintf(w, "export %s=%s\n", kv[0], shQuote(kv[1]))
		}
		return nil
	case "json":
		m := map[string]string{}
		for _, kv := range env {
			m[kv[0]] = kv[1]
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	default:
		return UnknownShellError{shell}
	}
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Helper is the process the caching wrapper asks for every compile
// (`xlacache pjrt serve`): one per socket.
type Helper struct {
	// Socket is the unix socket to serve.
	Socket string
	// Dir is the cache directory, for log lines.
	Dir string
	// Open opens the cache the helper serves from; it is called only once
	// the socket is this helper's.
	Open func(context.Context) (*cache.Cache, error)
	// NormalizeOptions is the Server's.
	NormalizeOptions func([]byte) ([]byte, error)
	// IdleExit is the Server's.
	IdleExit time.Duration
	// Plugins and HashMemo are the Server's: without them every helper
	// the wrapper starts hashes the inner plugin (hundreds of megabytes)
	// again before its first answer.
	Plugins  []string
	HashMemo string
	// RequireHit is the Server's: it still applies when the cache cannot
	// be opened.
	RequireHit config.RequireHit
	// Logger receives the helper's log lines (default slog.Default()).
	Logger *slog.Logger
}

// Run serves h.Socket until ctx ends or the helper has been idle for
// h.IdleExit. When another helper already serves the socket it returns
// nil at once. A cache that cannot be opened makes every request a plain
// compile: wrappers are waiting for this socket, and answering "compile"
// to each is better than making each wait for a helper that is gone.
func (h Helper) Run(ctx context.Context) error {
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	ln, err := Listen(h.Socket)
	if errors.Is(err, ErrHelperRunning) {
		log.Info("a pjrt helper already serves this socket", "socket", h.Socket)
		return nil
	}
	if err != nil {
		return err
	}
	c, err := h.Open(ctx)
	if err != nil {
		log.Warn("pjrt helper: cache unusable; wrappers compile without it", "dir", h.Dir, "err", err)
		c = nil
	} else {
		defer c.Close()
	}
	s := &Server{Cache: c, Logger: log, NormalizeOptions: h.NormalizeOptions, IdleExit: h.IdleExit,
		Plugins: h.Plugins, HashMemo: h.HashMemo, RequireHit: h.RequireHit}
	log.Info("pjrt helper serving", "socket", h.Socket, "dir", h.Dir, "writer", c.Writer(), "idle-exit", h.IdleExit.String())
	start := time.Now()
	err = s.Serve(ctx, ln)
	log.Info("pjrt helper done", "uptime", time.Since(start).Round(time.Millisecond))
	return err
}
