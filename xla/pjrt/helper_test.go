package pjrt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
)

// TestWriteEnv: bash quotes every value so that it comes back unchanged,
// json is one object, and an unknown shell is an UnknownShellError.
func TestWriteEnv(t *testing.T) {
	s := Setup{Name: "cpu", Inner: "/p/it's.so"}
	env := [][2]string{{"A", "it's a b"}, {"B", "x"}}
	var b bytes.Buffer
	if err := s.WriteEnv(&b, "zsh", env); err != nil {
		t.Fatal(err)
	}
	want := "# xlacache pjrt env: caching wrapper around /p/it's.so (plugin name \"cpu\")\nexport A='it'\\''s a b'\nexport B='x'\n"
	if b.String() != want {
		t.Errorf("bash:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := s.WriteEnv(&b, "json", env); err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["A"] != "it's a b" || len(m) != 2 {
		t.Errorf("json %s: %v %v", b.String(), m, err)
	}
	err := s.WriteEnv(&b, "fish", env)
	if !errors.As(err, new(UnknownShellError)) || err.Error() != `--shell "fish": want bash, sh, zsh or json` {
		t.Errorf("fish: %v", err)
	}
}

// TestHelperKeepsPluginHashes (issue 22): a Helper (`xlacache pjrt
// serve`) given the plugin and a memo directory hashes the plugin when it
// starts and keeps the hash there for the next helper, as the in-process
// helper does.
func TestHelperKeepsPluginHashes(t *testing.T) {
	plugin := fakePlugin(t, "plugin bytes")
	memo := filepath.Join(t.TempDir(), HashMemoDir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := Helper{Socket: filepath.Join(shortDir(t), "h.sock"), Plugins: []string{plugin}, HashMemo: memo,
		Open: func(context.Context) (*cache.Cache, error) { return nil, errors.New("no cache in this test") }}
	go func() { done <- h.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	name := (&fileHashes{dir: memo}).memoFile(plugin, fileID(must(os.Stat(plugin))))
	// The hash is written by Serve's background start-up work: wait for
	// it, bounded.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(name); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no plugin hash kept in %s", memo)
		}
	}
}
