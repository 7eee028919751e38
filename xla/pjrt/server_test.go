package pjrt

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	xlacache "github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// openCache opens a cache in dir that stores every compile (no minimum
// compile time), with mods applied to its options.
func openCache(t *testing.T, dir string, mods ...func(*config.Options)) *cache.Cache {
	t.Helper()
	o := config.Defaults()
	o.Dir = dir
	o.MinCompileTime = 0
	o.Role = config.RoleWriter
	for _, m := range mods {
		m(&o)
	}
	c, err := xlacache.Open(context.Background(), o, slog.Default())
	if err != nil {
		t.Fatalf("opening the cache: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// shortDir is a temporary directory with a path short enough for a unix
// socket (t.TempDir's can exceed 107 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "xp")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o700)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// serve runs s on a new socket until the test ends and returns the
// socket's path.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	sock := filepath.Join(shortDir(t), "h.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock
}

// fakeWrapper speaks the wrapper's side of the protocol: it accepts or
// rejects loads and "compiles" to a fixed executable and signature.
type fakeWrapper struct {
	reject bool   // answer every load with a failure
	exe    string // what a compile produces
	sig    string // the compiled executable's signature
}

// session runs one compile request and returns the done status and the
// helper's instructions in order ("L:<sig>:<exe>", "C:<want>").
func (w fakeWrapper) session(t *testing.T, sock string, req Request) (byte, []string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := writeFrame(c, frameRequest, encodeRequest(req)); err != nil {
		t.Fatal(err)
	}
	var events []string
	for {
		typ, p, err := readFrame(c)
		if err != nil {
			t.Fatalf("after %v: %v", events, err)
		}
		switch typ {
		case frameHeartbeat:
		case frameLoad:
			e, err := decodeEntry(p)
			if err != nil {
				t.Fatalf("load frame: %v", err)
			}
			events = append(events, "L:"+e.Signature+":"+string(e.Executable))
			if w.reject {
				writeFrame(c, frameLoadFail, []byte("rejected by the test"))
			} else {
				writeFrame(c, frameLoadOK, nil)
			}
		case frameCompile:
			events = append(events, "C:"+string(rune('0'+p[0])))
			var out []byte
			if p[0] == 1 {
				out = entry{Signature: w.sig, Executable: []byte(w.exe)}.encode()
			}
			writeFrame(c, frameCompiled, out)
		case frameDone:
			if len(p) > 1 { // a refusal's message
				events = append(events, "R:"+string(p[1:]))
			}
			return p[0], events
		default:
			t.Fatalf("unexpected frame %q", typ)
		}
	}
}

// fakePlugin writes a file standing for an inner plugin.
func fakePlugin(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pjrt_c_api_cpu_plugin.so")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const addText = `module @add {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
`

const addSig = "o=1;t=11;d=4"

func request(plugin string) Request {
	return Request{Format: "mlir", Program: []byte(addText), Options: []byte{0x1a, 0x02, 0x18, 0x01},
		Plugin: plugin, APIVersion: "0.81", Platform: "cpu", PlatformVersion: "v1", Topology: "process=0\ndevice id=0 process=0 kind=cpu\n"}
}

func TestServerMissStoresThenHits(t *testing.T) {
	c := openCache(t, t.TempDir())
	sock := serve(t, &Server{Cache: c})
	req := request(fakePlugin(t, "plugin A"))
	w := fakeWrapper{exe: "EXE-A", sig: addSig}

	st, ev := w.session(t, sock, req)
	if st != doneStored || strings.Join(ev, " ") != "C:1" {
		t.Fatalf("cold: status %q events %v, want stored after one compile", st, ev)
	}
	st, ev = w.session(t, sock, req)
	// The probe's reference is the program's declaration, not the entry's.
	if st != doneHit || strings.Join(ev, " ") != "L:"+addSig+":EXE-A" {
		t.Fatalf("warm: status %q events %v, want a hit loading EXE-A", st, ev)
	}
}

// Under XLACACHE_REQUIRE_HIT=fail the helper never asks for a compile: a
// miss ends in a refusal whose message names the program and why; a hit
// loads as ever.
func TestServerRequireHitFail(t *testing.T) {
	dir := t.TempDir()
	req := request(fakePlugin(t, "plugin A"))
	w := fakeWrapper{exe: "EXE-A", sig: addSig}
	golden := serve(t, &Server{Cache: openCache(t, dir, func(o *config.Options) { o.RequireHit = config.RequireHitFail })})
	st, ev := w.session(t, golden, req)
	if st != doneRefused || len(ev) != 1 || !strings.HasPrefix(ev[0], "R:xlacache-pjrt: program add (key add-") ||
		!strings.Contains(ev[0], "no entry for this program") {
		t.Fatalf("cold under fail: status %q events %v, want a refusal naming the program", st, ev)
	}
	if st, _ := w.session(t, serve(t, &Server{Cache: openCache(t, dir)}), req); st != doneStored {
		t.Fatalf("fill: status %q", st)
	}
	if st, ev := w.session(t, golden, req); st != doneHit || strings.Join(ev, " ") != "L:"+addSig+":EXE-A" {
		t.Fatalf("warm under fail: status %q events %v, want a hit", st, ev)
	}
}

// A helper whose cache could not be opened still keeps the requirement:
// under fail it refuses, under warn (and off) it lets the wrapper compile.
func TestServerRequireHitWithoutCache(t *testing.T) {
	req := request(fakePlugin(t, "p"))
	w := fakeWrapper{exe: "EXE", sig: addSig}
	st, ev := w.session(t, serve(t, &Server{RequireHit: config.RequireHitFail}), req)
	if st != doneRefused || len(ev) != 1 || !strings.Contains(ev[0], "program add (key none, backend pjrt)") ||
		!strings.Contains(ev[0], "could not open the cache") {
		t.Fatalf("fail: status %q events %v, want a refusal naming the program", st, ev)
	}
	if st, ev := w.session(t, serve(t, &Server{RequireHit: config.RequireHitWarn}), req); st != doneCompiled || strings.Join(ev, " ") != "C:0" {
		t.Fatalf("warn: status %q events %v, want a compile", st, ev)
	}
}

func TestServerRejectedEntryIsQuarantinedAndRecompiled(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, dir)
	sock := serve(t, &Server{Cache: c})
	req := request(fakePlugin(t, "plugin A"))
	if st, _ := (fakeWrapper{exe: "EXE-A", sig: addSig}).session(t, sock, req); st != doneStored {
		t.Fatalf("cold: status %q", st)
	}
	st, ev := fakeWrapper{reject: true, exe: "EXE-B", sig: addSig}.session(t, sock, req)
	if st != doneStored || len(ev) != 2 || !strings.HasPrefix(ev[0], "L:") || ev[1] != "C:1" {
		t.Fatalf("rejected load: status %q events %v, want load, compile, store", st, ev)
	}
	q, _ := os.ReadDir(filepath.Join(dir, "quarantine"))
	if len(q) == 0 {
		t.Error("the rejected entry was not quarantined")
	}
	_, ev = fakeWrapper{exe: "EXE-C", sig: addSig}.session(t, sock, req)
	if strings.Join(ev, " ") != "L:"+addSig+":EXE-B" {
		t.Fatalf("after recompiling: events %v, want the new entry loaded", ev)
	}
}

// Every part of the key that the issue names splits it: the CPU features
// and the inner plugin's file content (and, with them, platform and
// topology, the same way).
func TestServerKeySplits(t *testing.T) {
	dir := t.TempDir()
	pluginA := fakePlugin(t, "plugin A")
	pluginB := fakePlugin(t, "plugin B")
	w := fakeWrapper{exe: "EXE", sig: addSig}
	for _, tc := range []struct {
		name string
		cpu  string
		req  func(Request) Request
		hit  bool
	}{
		{"first", "cpu-1", func(r Request) Request { return r }, false},
		{"same", "cpu-1", func(r Request) Request { return r }, true},
		{"other CPU features", "cpu-2", func(r Request) Request { return r }, false},
		{"other plugin file", "cpu-1", func(r Request) Request { r.Plugin = pluginB; return r }, false},
		{"other platform version", "cpu-1", func(r Request) Request { r.PlatformVersion = "v2"; return r }, false},
		{"other topology", "cpu-1", func(r Request) Request { r.Topology += "device id=1 process=0 kind=cpu\n"; return r }, false},
		{"other options", "cpu-1", func(r Request) Request { r.Options = []byte{0x1a, 0x02, 0x18, 0x02}; return r }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openCache(t, dir)
			sock := serve(t, &Server{Cache: c, CPUFeatures: tc.cpu})
			st, _ := w.session(t, sock, tc.req(request(pluginA)))
			if got := st == doneHit; got != tc.hit {
				t.Fatalf("status %q: hit %v, want %v", st, got, tc.hit)
			}
		})
	}
}

// A replaced plugin file at the same path is a new plugin: the memoized
// hash follows the file.
func TestServerPluginReplacedInPlace(t *testing.T) {
	c := openCache(t, t.TempDir())
	sock := serve(t, &Server{Cache: c})
	plugin := fakePlugin(t, "plugin A")
	w := fakeWrapper{exe: "EXE", sig: addSig}
	w.session(t, sock, request(plugin))
	if err := os.WriteFile(plugin, []byte("plugin A, rebuilt"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := w.session(t, sock, request(plugin)); st == doneHit {
		t.Fatal("an entry of the old plugin file was loaded for the new one")
	}
}

func TestServerReaderDoesNotAskForBytes(t *testing.T) {
	dir := t.TempDir()
	c := openCache(t, dir, func(o *config.Options) { o.Role = config.RoleReader })
	sock := serve(t, &Server{Cache: c})
	st, ev := fakeWrapper{exe: "EXE", sig: addSig}.session(t, sock, request(fakePlugin(t, "p")))
	if st != doneCompiled || strings.Join(ev, " ") != "C:0" {
		t.Fatalf("reader: status %q events %v, want a compile without bytes, nothing stored", st, ev)
	}
}

// An executable whose outputs differ from what the program declares is
// never stored: it could never pass its probe.
func TestServerSignatureMismatchNotStored(t *testing.T) {
	c := openCache(t, t.TempDir())
	sock := serve(t, &Server{Cache: c})
	req := request(fakePlugin(t, "p"))
	w := fakeWrapper{exe: "EXE", sig: "o=1;t=11;d=8"}
	for i := range 2 {
		if st, ev := w.session(t, sock, req); st != doneCompiled || strings.Join(ev, " ") != "C:1" {
			t.Fatalf("session %d: status %q events %v, want compiled, not stored", i, st, ev)
		}
	}
}

func TestServerWithoutCacheCompiles(t *testing.T) {
	sock := serve(t, &Server{})
	st, ev := fakeWrapper{exe: "EXE", sig: addSig}.session(t, sock, request(fakePlugin(t, "p")))
	if st != doneCompiled || strings.Join(ev, " ") != "C:0" {
		t.Fatalf("no cache: status %q events %v", st, ev)
	}
}

func TestServerBadRequests(t *testing.T) {
	sock := serve(t, &Server{Cache: openCache(t, t.TempDir())})
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"truncated", encodeRequest(request("p"))[:20]},
		{"other protocol", append([]byte{0, 0, 0, 15}, []byte("xlacache-pjrt/0")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			writeFrame(c, frameRequest, tc.payload)
			typ, p, err := readFrame(c)
			if err != nil || typ != frameDone || len(p) != 1 || p[0] != doneError {
				t.Fatalf("got %q %q %v, want done with an error status", typ, p, err)
			}
		})
	}
}

// Many sessions at once on one key: every one ends with an executable,
// and single-flight lets one compile (the others load its entry).
func TestServerConcurrentSessions(t *testing.T) {
	c := openCache(t, t.TempDir())
	sock := serve(t, &Server{Cache: c})
	req := request(fakePlugin(t, "p"))
	var mu sync.Mutex
	compiles := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, ev := fakeWrapper{exe: "EXE", sig: addSig}.session(t, sock, req)
			if st == doneError {
				t.Errorf("session failed: %v", ev)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, e := range ev {
				if strings.HasPrefix(e, "C:") {
					compiles++
				}
			}
		}()
	}
	wg.Wait()
	if compiles != 1 {
		t.Errorf("%d compiles for 8 concurrent sessions on one key, want 1 (single-flight)", compiles)
	}
}

func TestListenOneHelperPerSocket(t *testing.T) {
	sock := filepath.Join(shortDir(t), "h.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(sock); !errors.Is(err, ErrHelperRunning) {
		t.Fatalf("second Listen: %v, want ErrHelperRunning", err)
	}
	ln.Close()
	// A socket file left by a dead helper does not stop the next one.
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err = Listen(sock)
	if err != nil {
		t.Fatalf("Listen over a stale socket file: %v", err)
	}
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("socket mode %v (%v), want owner-only", st.Mode(), err)
	}
	ln.Close()
}

func TestServeIdleExit(t *testing.T) {
	sock := filepath.Join(shortDir(t), "h.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- (&Server{IdleExit: 50 * time.Millisecond}).Serve(context.Background(), ln) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("an idle helper did not exit")
	}
}

// An entry of another plugin planted under this plugin's key is refused
// before the wrapper sees it: the wrapper is never asked to load it.
func TestServerEntryOfAnotherPluginNeverReachesTheWrapper(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := openCache(t, dir)
	var k keys
	sock := serve(t, &Server{Cache: c, keyHook: k.hook})
	reqA, reqB := request(fakePlugin(t, "plugin A")), request(fakePlugin(t, "plugin B"))
	reqB.Program = []byte(strings.Replace(addText, "@add", "@addb", 1))
	w := fakeWrapper{exe: "EXE", sig: addSig}
	w.session(t, sock, reqA)
	w.session(t, sock, reqB)
	tier := c.Tier(cache.ExecutablesTier)
	foreign, ok := tier.Get(ctx, k.get(t, "addb"))
	if !ok {
		t.Fatal("no entry for plugin B")
	}
	keyA := k.get(t, "add")
	matches, _ := filepath.Glob(filepath.Join(dir, "executables", "*", keyA.String()))
	if len(matches) != 1 {
		t.Fatalf("entry files for A: %v", matches)
	}
	os.Remove(matches[0])
	if err := tier.Put(ctx, keyA, foreign, time.Second); err != nil {
		t.Fatal(err)
	}
	st, ev := w.session(t, sock, reqA)
	if st != doneStored || strings.Join(ev, " ") != "C:1" {
		t.Fatalf("status %q events %v: want a compile, no load", st, ev)
	}
}
