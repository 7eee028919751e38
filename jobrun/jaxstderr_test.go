package jobrun

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestRejectScanner(t *testing.T) {
	warn := func(m string) string {
		return "/site-packages/jax/_src/compiler.py:742: UserWarning: Error reading persistent compilation cache entry for '" + m + "': XlaRuntimeError: INVALID_ARGUMENT: cpu feature mismatch\n"
	}
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"one warning", []string{warn("jit_step")}, []string{"jit_step"}},
		{"split across writes", []string{"noise\n" + warn("jit_a")[:30], warn("jit_a")[30:] + "more\n"}, []string{"jit_a"}},
		{"two modules", []string{warn("jit_a") + warn("jit_b")}, []string{"jit_a", "jit_b"}},
		{"last line without newline", []string{strings.TrimSuffix(warn("jit_c"), "\n")}, []string{"jit_c"}},
		{"other warnings", []string{"Error writing persistent compilation cache entry for 'jit_w': x\n", "Error reading persistent compilation cache entry for ''\n"}, nil},
		{"over-long line is bounded and the next still seen", []string{strings.Repeat("x", 2*maxScannedLine) + "\n" + warn("jit_d")}, []string{"jit_d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			s := &rejectScanner{w: &out}
			var all string
			for _, c := range tc.chunks {
				if n, err := s.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				all += c
			}
			s.flush()
			if out.String() != all {
				t.Error("output not passed on unchanged")
			}
			if got := s.Rejected(); !slices.Equal(got, tc.want) {
				t.Errorf("rejected %q, want %q", got, tc.want)
			}
			if len(s.line) > maxScannedLine {
				t.Errorf("kept %d bytes of a line", len(s.line))
			}
		})
	}
}

// FuzzRejectScanner: whatever the command writes, and however it is cut
// into writes, it is passed on unchanged, the scanner keeps a bounded
// part of a line, and every module it reports is a non-empty name with no
// quote in it, found after JAX's prefix.
func FuzzRejectScanner(f *testing.F) {
	f.Add([]byte("UserWarning: Error reading persistent compilation cache entry for 'jit_f': XlaRuntimeError: x\n"), uint8(7))
	f.Add([]byte("a\nError reading persistent compilation cache entry for 'jit_g'"), uint8(1))
	f.Add([]byte("Error reading persistent compilation cache entry for '\n'\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var out bytes.Buffer
		s := &rejectScanner{w: &out}
		step := int(cut)%17 + 1
		for i := 0; i < len(data); i += step {
			s.Write(data[i:min(i+step, len(data))])
		}
		s.flush()
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatal("output changed on its way through")
		}
		if len(s.line) > maxScannedLine {
			t.Fatalf("kept %d bytes of a line", len(s.line))
		}
		for _, m := range s.Rejected() {
			if m == "" || strings.ContainsAny(m, "'\n") || !bytes.Contains(data, []byte(rejectedPrefix+m+"'")) {
				t.Fatalf("module %q", m)
			}
		}
	})
}
