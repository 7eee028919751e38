package config

import (
	"strings"
	"testing"
)

func lookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// withMemory makes availableMemory report avail (ok false: unknown).
func withMemory(t *testing.T, avail int64, ok bool) {
	t.Helper()
	old := availableMemory
	availableMemory = func() (int64, bool) { return avail, ok }
	t.Cleanup(func() { availableMemory = old })
}

func TestSharedMaxObjectSize(t *testing.T) {
	withMemory(t, 0, false)
	o, err := FromEnv(lookupMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.SharedMaxObjectSize != 0 || o.EffectiveSharedMaxObjectSize() != DefaultSharedMaxObjectSize {
		t.Fatalf("default: %d, effective %d", o.SharedMaxObjectSize, o.EffectiveSharedMaxObjectSize())
	}
	o, err = FromEnv(lookupMap(map[string]string{EnvSharedMaxObjectSize: "256MiB"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.SharedMaxObjectSize != 256<<20 || o.EffectiveSharedMaxObjectSize() != 256<<20 || o.Sources[EnvSharedMaxObjectSize] != SourceEnv {
		t.Fatalf("256MiB: %d, effective %d, source %q", o.SharedMaxObjectSize, o.EffectiveSharedMaxObjectSize(), o.Sources[EnvSharedMaxObjectSize])
	}
	for _, bad := range []string{"0", "-1", "lots", "1XB"} {
		if _, err := FromEnv(lookupMap(map[string]string{EnvSharedMaxObjectSize: bad})); err == nil || !strings.Contains(err.Error(), EnvSharedMaxObjectSize) {
			t.Errorf("%s=%q: %v, want an error naming the variable", EnvSharedMaxObjectSize, bad, err)
		}
	}
	if err := (Options{SharedMaxObjectSize: -1}).Validate(); err == nil {
		t.Error("Validate accepted a negative SharedMaxObjectSize")
	}
}

// TestSharedMaxObjectSizeMemoryCap is issue 10 item 4: the bound is never
// more than half the memory the process can still allocate, whatever is
// configured, so a planted object cannot run a host out of memory.
func TestSharedMaxObjectSizeMemoryCap(t *testing.T) {
	for _, tt := range []struct {
		name       string
		configured int64
		avail      int64
		want       int64
	}{
		{"3 GiB free lowers the default", 0, 3 << 30, 3 << 29},
		{"and a configured 16 GiB", 16 << 30, 3 << 30, 3 << 29},
		{"plenty free keeps the default", 0, 64 << 30, DefaultSharedMaxObjectSize},
		{"a smaller configured bound wins", 1 << 20, 3 << 30, 1 << 20},
		{"the cap has a floor", 0, 10 << 20, minSharedObjectLimit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			withMemory(t, tt.avail, true)
			if got := (Options{SharedMaxObjectSize: tt.configured}).EffectiveSharedMaxObjectSize(); got != tt.want {
				t.Fatalf("EffectiveSharedMaxObjectSize = %d, want %d", got, tt.want)
			}
		})
	}
}
