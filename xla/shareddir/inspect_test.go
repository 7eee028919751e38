package shareddir_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// TestInspect checks which parts a directory is found to hold: JAX
// entries alone keep the JAX-only behaviour; with any xlacache state both
// parts are handled.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	jaxEntry := func(dir string) {
		if err := jaxcache.WriteEntry(dir, jaxKey("jit_f", 1), []byte("exe"), time.Now(), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		make func(dir string)
		want shareddir.Contents
	}{
		{"empty", func(string) {}, shareddir.Contents{Own: true}},
		{"jax only", jaxEntry, shareddir.Contents{JAX: true}},
		{"jax and state", func(dir string) {
			jaxEntry(dir)
			os.Mkdir(filepath.Join(dir, layout.StateDir), 0o700)
		}, shareddir.Contents{Own: true, JAX: true}},
		{"jax and a backend tier", func(dir string) {
			jaxEntry(dir)
			writeFile(t, layout.Dir(dir).Entry("cpu/kernels", jaxKey("k", 2)), []byte("x"))
		}, shareddir.Contents{Own: true, JAX: true}},
		{"jax and XLA's subcaches", func(dir string) {
			jaxEntry(dir)
			writeFile(t, filepath.Join(dir, jaxcache.AutotuneDirName, "A.textproto"), []byte("x"))
		}, shareddir.Contents{JAX: true}},
		{"subcaches only", func(dir string) {
			os.MkdirAll(filepath.Join(dir, jaxcache.AutotuneDirName), 0o700)
		}, shareddir.Contents{Own: true}},
	} {
		dir := t.TempDir()
		tc.make(dir)
		got, err := shareddir.Inspect(ctx, dir)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := shareddir.Inspect(ctx, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing directory: no error")
	}
}

// jaxKey is a JAX cache key: "<module>-<sha256 hex>".
func jaxKey(module string, seed int) string {
	h := sha256.Sum256([]byte{byte(seed), byte(seed >> 8)})
	return module + "-" + hex.EncodeToString(h[:])
}

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
