package stablehlo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFuzzSeedsParse makes sure the committed seed corpus exercises the
// accepting paths: every seed except the deliberately malformed ones must
// parse and evaluate.
func TestFuzzSeedsParse(t *testing.T) {
	files, err := filepath.Glob("testdata/fuzz/FuzzParse/*")
	if err != nil || len(files) < 10 {
		t.Fatalf("seed corpus missing: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(b), "\n", 3)
		if len(lines) < 2 || lines[0] != "go test fuzz v1" {
			t.Fatalf("%s: not a fuzz corpus file", f)
		}
		lit := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		src, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		m, err := Parse([]byte(src), filepath.Base(f))
		if strings.Contains(f, "bad_") {
			if err == nil {
				t.Fatalf("%s: malformed seed parsed", f)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		main := m.Main()
		args := make([]*Tensor, len(main.Args))
		for i, a := range main.Args {
			args[i] = NewTensor(a.Type)
		}
		if _, err := Eval(m, "", args); err != nil {
			t.Fatalf("%s: eval: %v", f, err)
		}
	}
}
