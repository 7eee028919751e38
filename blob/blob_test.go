package blob

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"executables/m-abc", true},
		{"xla_gpu_per_fusion_autotune_cache_dir/AbC-_=.textproto", true},
		{"", false},
		{"/abs", false},
		{"a//b", false},
		{"a/./b", false},
		{"../x", false},
		{"a/..", false},
		{"a\\b", false},
		{"a\x00b", false},
		{"a\nb", false},
		{strings.Repeat("x", 901), false},
	}
	for _, tt := range tests {
		if err := ValidName(tt.name); (err == nil) != tt.ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func FuzzValidName(f *testing.F) {
	f.Add("executables/x")
	f.Add("a/../b")
	f.Add("./a")
	f.Fuzz(func(t *testing.T, name string) {
		if ValidName(name) != nil {
			return
		}
		// A valid name joined under a directory stays inside it.
		p := filepath.Join("/base", filepath.FromSlash(name))
		if !strings.HasPrefix(p, "/base/") {
			t.Fatalf("valid name %q escapes: %s", name, p)
		}
	})
}
