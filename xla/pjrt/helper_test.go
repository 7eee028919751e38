package pjrt

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
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
