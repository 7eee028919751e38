package jaxcache

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
)

// TestInspect checks which parts a directory is found to hold: JAX
// entries alone keep the JAX-only behaviour; with any xlacache state both
// parts are handled.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	jaxEntry := func(dir string) {
		writeEntry(t, dir, entrySpec{key: key("jit_f", 1), codec: CodecZstd, exe: []byte("exe"), lastUse: time.Now()})
	}
	for _, tc := range []struct {
		name string
		make func(dir string)
		want Contents
	}{
		{"empty", func(string) {}, Contents{Own: true}},
		{"jax only", jaxEntry, Contents{JAX: true}},
		{"jax and state", func(dir string) {
			jaxEntry(dir)
			os.Mkdir(filepath.Join(dir, layout.StateDir), 0o700)
		}, Contents{Own: true, JAX: true}},
		{"jax and a backend tier", func(dir string) {
			jaxEntry(dir)
			writeFile(t, layout.Dir(dir).Entry("cpu/kernels", key("k", 2)), []byte("x"), time.Now())
		}, Contents{Own: true, JAX: true}},
		{"jax and XLA's subcaches", func(dir string) {
			jaxEntry(dir)
			writeFile(t, filepath.Join(dir, AutotuneDirName, "A.textproto"), []byte("x"), time.Now())
		}, Contents{JAX: true}},
		{"subcaches only", func(dir string) {
			os.MkdirAll(filepath.Join(dir, AutotuneDirName), 0o700)
		}, Contents{Own: true}},
	} {
		dir := t.TempDir()
		tc.make(dir)
		got, err := Inspect(ctx, dir)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if _, err := Inspect(ctx, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing directory: no error")
	}
}
