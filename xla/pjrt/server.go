package pjrt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// maxRefusal bounds the message of a refused compile (a key and a
// reason: far less).
const maxRefusal = 4096

// Heartbeat is how often the helper tells a waiting wrapper it is alive
// while the cache works (a single-flight wait can outlast the wrapper's
// read timeout; a hung helper sends nothing and the wrapper compiles).
const Heartbeat = time.Second

// Server answers the caching wrapper's compile requests from a cache: the
// one place where the PJRT wrapper's entries meet xlacache's rules. Each
// request runs cache.Compile with a backend whose Load and Compile are
// carried out by the wrapper, in the process that asked, over the
// connection: so verification, signing, the size bound, roles,
// single-flight, the shared tier, thresholds, quarantine and statistics
// apply as they do to every other backend.
type Server struct {
	// Cache is where entries live; a nil or disabled cache makes every
	// request a plain compile.
	Cache *cache.Cache
	// Logger receives the server's log lines (default slog.Default()).
	Logger *slog.Logger
	// NormalizeOptions, when set, rewrites serialized compile options for
	// the key (clearing dump and cache-path options).
	NormalizeOptions func([]byte) ([]byte, error)
	// CPUFeatures overrides the host CPU description in keys (tests).
	CPUFeatures string
	// IdleExit, when positive, ends Serve after that long without a
	// connection (a helper started on demand goes away on its own).
	IdleExit time.Duration
	// Plugins are inner plugins whose file hashes (part of every key)
	// Serve computes in the background when it starts, so a first compile
	// does not wait for them: a plugin is hundreds of megabytes (259 MB
	// for xla-cpu-pjrt 0.0.1), and without HashMemo a new process's
	// first hit would otherwise wait a few hundred milliseconds for it.
	Plugins []string
	// HashMemo, when set, is a directory where plugin file hashes are
	// kept across processes, by path and file identity (device, inode,
	// size, modification and change times). It must be as trusted as the
	// code the host loads: a memo decides which entries a plugin loads.
	// Owner-only; a memo not owned by this user, or writable by others,
	// is ignored.
	HashMemo string
	// RequireHit is XLACACHE_REQUIRE_HIT for when Cache is nil (it could
	// not be opened): every compile is then a miss to warn about or
	// refuse. With a cache, the cache's own option rules.
	RequireHit config.RequireHit

	// keyHook, when set (tests), sees every request and the key it gets.
	keyHook func(Request, cache.Key)

	hashes fileHashes
	active atomic.Int64
	last   atomic.Int64 // unix nanoseconds of the last connection's end
	warned sync.Map     // log-once keys
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) warnOnce(key, msg string, args ...any) {
	if _, dup := s.warned.LoadOrStore(key, true); !dup {
		s.logger().Warn(msg, args...)
	}
}

// Listener is a helper's unix socket, held with a lock file so that only
// one helper serves a socket path at a time.
type Listener struct {
	net.Listener
	lock *os.File
	path string
}

// ErrHelperRunning is returned by Listen when another helper holds the
// socket path.
var ErrHelperRunning = errors.New("another helper serves this socket")

// Listen creates the helper's unix socket at path, readable and writable by
// the owner only, in a directory it creates owner-only. Another live
// helper on the same path is ErrHelperRunning; a stale socket file (its
// helper died) is replaced.
func Listen(path string) (*Listener, error) {
	if len(path) >= 108 {
		return nil, fmt.Errorf("socket path %s is %d bytes; unix sockets allow 107", path, len(path))
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	// The directory may be shared (/tmp): only one of our own, closed to
	// others, keeps another user from standing in for the helper.
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o077 != 0) {
		return nil, fmt.Errorf("socket directory %s must be owned by uid %d and closed to others (mode %v)", dir, os.Getuid(), st.Mode().Perm())
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("helper lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrHelperRunning
		}
		return nil, fmt.Errorf("helper lock: %w", err)
	}
	// Holding the lock, any socket file left is a dead helper's.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		lock.Close()
		return nil, fmt.Errorf("removing stale socket: %w", err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return &Listener{Listener: ln, lock: lock, path: path}, nil
}

// Close stops listening, removes the socket and releases the lock.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	if cerr := l.lock.Close(); err == nil {
		err = cerr
	}
	return err
}

// Serve answers connections on ln until ctx ends or, with IdleExit, the
// helper has been idle that long. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer ln.Close()
	s.last.Store(time.Now().UnixNano())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	if s.IdleExit > 0 {
		go s.idleWatch(ctx, cancel)
	}
	s.hashes.mu.Lock()
	s.hashes.dir = s.HashMemo
	s.hashes.mu.Unlock()
	for _, p := range s.Plugins {
		// A failure here is seen again, and reported, by the compile
		// that needs the hash.
		go s.hashes.sum(p) //nolint:errcheck
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting: %w", err)
		}
		s.active.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				s.last.Store(time.Now().UnixNano())
				s.active.Add(-1)
			}()
			s.handle(ctx, conn)
		}()
	}
}

func (s *Server) idleWatch(ctx context.Context, cancel func()) {
	t := time.NewTicker(min(s.IdleExit/4+time.Millisecond, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.active.Load() == 0 && time.Since(time.Unix(0, s.last.Load())) >= s.IdleExit {
				s.logger().Info("pjrt helper idle; exiting", "idle", s.IdleExit)
				cancel()
				return
			}
		}
	}
}

// conn is one wrapper session: frames written under a mutex (the
// heartbeat shares the connection).
type conn struct {
	c  net.Conn
	mu sync.Mutex
}

func (c *conn) send(typ byte, p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return writeFrame(c.c, typ, p)
}

// handle serves one compile.
func (s *Server) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	start := time.Now()
	c := &conn{c: nc}
	// The request comes right after connecting; a peer that sends nothing
	// does not hold a goroutine forever.
	nc.SetReadDeadline(time.Now().Add(time.Minute))
	typ, p, err := readFrame(nc)
	if err != nil || typ != frameRequest {
		s.warnOnce("request", "pjrt helper: bad request; the wrapper compiles without the cache", "err", err, "type", string(typ))
		return
	}
	nc.SetReadDeadline(time.Time{})
	req, err := parseRequest(p)
	requestTime := time.Since(start)
	if err != nil {
		s.warnOnce("parse", "pjrt helper: bad request; the wrapper compiles without the cache", "err", err)
		c.send(frameDone, []byte{doneError})
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A wrapper that goes away (its process ended) ends the session:
	// cache.Compile's waits watch ctx.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if c.send(frameHeartbeat, nil) != nil {
					cancel()
					return
				}
			}
		}
	}()
	b := &remote{s: s, c: c, req: req, declared: declaredSignature(req)}
	if s.Cache == nil && s.RequireHit != config.RequireHitOff {
		miss := &cache.MissError{Module: moduleName(req), Backend: BackendName, Reason: "the helper could not open the cache"}
		if s.RequireHit == config.RequireHitFail {
			c.send(frameDone, append([]byte{doneRefused}, "xlacache-pjrt: "+miss.Error()...))
			return
		}
		s.logger().Warn("compiled without a cache hit ("+config.EnvRequireHit+"=warn)", "module", miss.Module, "backend", BackendName, "reason", miss.Reason)
	}
	exe, rep, err := cache.Compile(ctx, s.Cache, b, cache.Program{Name: moduleName(req), Text: req.Program, Options: req.Options})
	status := byte(doneCompiled)
	var msg []byte
	switch {
	case errors.Is(err, cache.ErrHitRequired):
		// The wrapper fails the host's compile with this message, which
		// names the program, its key and why it missed.
		status = doneRefused
		msg = []byte("xlacache-pjrt: " + err.Error())
		if len(msg) > maxRefusal {
			msg = msg[:maxRefusal]
		}
	case err != nil || exe == nil:
		status = doneError
		if b.compiled {
			status = doneCompiled // the inner compile failed: the wrapper has its error
		}
	case rep != nil && rep.Hit:
		status = doneHit
	case rep != nil && rep.Stored:
		status = doneStored
	}
	// Logged before the answer, so that whoever reads the answer finds
	// the line.
	s.logServed(ctx, req, status, rep, requestTime, time.Since(start))
	// After a hit the wrapper has its executable and does not wait for
	// this (nothing but "hit" can follow its "loaded"): it may be gone.
	if err := c.send(frameDone, append([]byte{status}, msg...)); err != nil && status != doneHit {
		s.logger().Debug("pjrt helper: wrapper went away", "err", err)
	}
}

// logServed logs, at debug level, where the helper's time for one compile
// went: reading the request, then the cache's phases ("key", "lookup"
// with the entry's read and verification, "load", of it "wrapper": the
// round trip in which the wrapper deserializes and probes), so that a
// hit's overhead beyond the inner deserialize can be told apart
// (docs/pjrt.md, Benchmark).
func (s *Server) logServed(ctx context.Context, req Request, status byte, rep *cache.Report, request, total time.Duration) {
	log := s.logger()
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	args := []any{"module", moduleName(req), "status", string(status), "program_bytes", len(req.Program),
		"total_ms", ms(total), "request_ms", ms(request)}
	if rep != nil {
		for _, p := range rep.PhaseTotals() {
			args = append(args, p.Name+"_ms", ms(p.Duration))
		}
	}
	log.Debug(servedMsg, args...)
}

// servedMsg is logServed's message (benchmarks look for it).
const servedMsg = "pjrt helper: served"

// remote is the cache.Backend of one wrapper session: Load and Compile
// are done by the wrapper, in its process, at the helper's request.
type remote struct {
	s        *Server
	c        *conn
	req      Request
	declared string
	identity string // the inner plugin's, as in the key
	compiled bool
}

func (b *remote) Name() string { return BackendName }

func (b *remote) KeyParts(_ context.Context, p cache.Program) ([]cache.KeyPart, error) {
	parts, err := b.s.keyParts(b.req)
	for _, part := range parts {
		if part.Name == "backend" {
			b.identity = string(part.Data)
		}
	}
	if err == nil && b.s.keyHook != nil {
		b.s.keyHook(b.req, cache.NewKey(p.Name, parts))
	}
	return parts, err
}

// reply reads the wrapper's answer to a load or compile. The wrapper is
// working (deserializing, compiling): no deadline, but a closed
// connection or an ended ctx ends the wait.
func (b *remote) reply(ctx context.Context) (byte, []byte, error) {
	type res struct {
		t   byte
		p   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		t, p, err := readFrame(b.c.c)
		ch <- res{t, p, err}
	}()
	select {
	case r := <-ch:
		return r.t, r.p, r.err
	case <-ctx.Done():
		b.c.c.Close()
		return 0, nil, ctx.Err()
	}
}

// Load has the wrapper deserialize and probe data. The probe's reference
// is the signature the program's text declares when it can be read,
// otherwise the one recorded when the entry was compiled.
func (b *remote) Load(ctx context.Context, data []byte, sess *cache.Session) (cache.Executable, error) {
	st, err := decodeStored(data)
	if err != nil {
		return nil, err
	}
	if st.Identity != b.identity {
		return nil, fmt.Errorf("entry compiled by another plugin (%q), not %q", firstDiff(st.Identity, b.identity), firstDiff(b.identity, st.Identity))
	}
	e := st.Entry
	want := e.Signature
	if b.declared != "" {
		want = b.declared
	}
	rt := time.Now()
	if err := b.c.send(frameLoad, entry{Signature: want, Executable: e.Executable}.encode()); err != nil {
		return nil, err
	}
	t, p, err := b.reply(ctx)
	sess.Phase("wrapper", time.Since(rt))
	if err != nil {
		return nil, err
	}
	switch t {
	case frameLoadOK:
		return loaded{}, nil
	case frameLoadFail:
		return nil, fmt.Errorf("wrapper rejected the entry: %s", p)
	}
	return nil, fmt.Errorf("unexpected frame %q answering a load", t)
}

// Compile has the wrapper compile through the inner plugin and send back
// the serialized executable when this process will store it.
func (b *remote) Compile(ctx context.Context, _ cache.Program, _ *cache.Session) (cache.Executable, error) {
	want := byte(0)
	if b.s.Cache.Writer() {
		want = 1
	}
	b.compiled = true
	if err := b.c.send(frameCompile, []byte{want}); err != nil {
		return nil, err
	}
	t, p, err := b.reply(ctx)
	if err != nil {
		return nil, err
	}
	switch t {
	case frameCompiled:
		if len(p) == 0 {
			return compiled{err: errors.New("wrapper sent no serialized executable")}, nil
		}
		e, err := decodeEntry(p)
		if err != nil {
			return compiled{err: fmt.Errorf("wrapper's serialized executable: %w", err)}, nil
		}
		if b.declared != "" && e.Signature != b.declared {
			// Such an entry could never pass its probe: not worth storing.
			b.s.warnOnce("sig:"+b.declared, "pjrt helper: compiled executable's outputs differ from the program's declaration; not caching it",
				"declared", b.declared, "compiled", e.Signature)
			return compiled{err: errors.New("signature mismatch")}, nil
		}
		return compiled{data: stored{Identity: b.identity, Entry: e}.encode()}, nil
	case frameCompErr:
		return nil, fmt.Errorf("inner plugin: %s", p)
	}
	return nil, fmt.Errorf("unexpected frame %q answering a compile", t)
}

// firstDiff returns the first line of a that b lacks, for log lines.
func firstDiff(a, b string) string {
	other := map[string]bool{}
	for _, l := range strings.Split(b, "\n") {
		other[l] = true
	}
	for _, l := range strings.Split(a, "\n") {
		if !other[l] {
			return l
		}
	}
	return ""
}

// loaded stands for an executable the wrapper loaded; the helper never
// serializes it (only compiled ones are stored).
type loaded struct{}

func (loaded) Serialize() ([]byte, error) {
	return nil, errors.New("a loaded executable is not stored again")
}

// compiled carries the wrapper's serialized executable to the cache.
type compiled struct {
	data []byte
	err  error
}

func (c compiled) Serialize() ([]byte, error) { return c.data, c.err }
