package cc

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// memoTestSetup points the user cache directory at a fresh directory and
// returns it with the resolved default compiler and its memo file.
func memoTestSetup(t *testing.T) (ucd, name, real, memo string) {
	t.Helper()
	ucd = t.TempDir()
	t.Setenv("XDG_CACHE_HOME", ucd)
	t.Setenv("HOME", ucd) // os.UserCacheDir falls back to it on some systems
	name = "cc"
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("no C compiler: %v", err)
	}
	real, memo, ok := memoFile(path)
	if !ok {
		t.Fatalf("no memo file for %s", path)
	}
	return ucd, name, real, memo
}

// TestProbeMemoLocation checks that the memo lives in its own 0700
// directory outside the default cache directory, as a 0600 file, and that
// nothing is written under <user cache dir>/xlacache.
func TestProbeMemoLocation(t *testing.T) {
	ucd, name, real, memo := memoTestSetup(t)
	if want := filepath.Join(ucd, "xlacache-ccprobe"); filepath.Dir(memo) != want {
		t.Fatalf("memo at %s, want it in %s", memo, want)
	}
	c, err := probeMemo(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != real || c.Version == "" {
		t.Fatalf("probe result %+v", c)
	}
	st, err := os.Stat(memo)
	if err != nil {
		t.Fatalf("memo not written: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("memo mode %v, want 0600", st.Mode().Perm())
	}
	dst, err := os.Stat(filepath.Dir(memo))
	if err != nil {
		t.Fatal(err)
	}
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("memo directory mode %v, want 0700", dst.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(ucd, "xlacache")); err == nil {
		t.Errorf("probe wrote into the default cache directory %s", filepath.Join(ucd, "xlacache"))
	}
	entries, err := os.ReadDir(filepath.Dir(memo))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("memo directory holds %d files, want just the memo (no temporary files)", len(entries))
	}
}

// TestProbeMemoValidated checks that a valid memo is used instead of
// probing, and that a damaged or tampered one causes a re-probe that
// replaces it.
func TestProbeMemoValidated(t *testing.T) {
	_, name, real, memo := memoTestSetup(t)
	probed, err := probeMemo(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	record := func(version string, flags []string) string {
		data, err := json.Marshal(memoRecord{Path: real, Version: version, Target: probed.Target, Flags: flags})
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	const marker = "memoized-compiler 1.0"
	injected := append(append([]string(nil), probed.Flags...), "-fplugin=/tmp/evil.so")
	for _, tc := range []struct {
		name, content string
		used          bool
	}{
		{"valid", record(marker, probed.Flags), true},
		{"garbage", "\x00not json", false},
		{"truncated", record(marker, probed.Flags)[:20], false},
		{"injected flag", record(marker, injected), false},
		{"missing flags", record(marker, nil), false},
		{"multi-line version", record(marker+"\n-o /etc/passwd", probed.Flags), false},
		{"empty version", record("", probed.Flags), false},
		{"other compiler", strings.Replace(record(marker, probed.Flags), real, "/usr/bin/false", 1), false},
		{"unknown field", strings.Replace(record(marker, probed.Flags), "{", `{"Extra":1,`, 1), false},
		{"trailing data", record(marker, probed.Flags) + "{}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(memo, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := probeMemo(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Version == marker; got != tc.used {
				t.Fatalf("memo used = %v, want %v (version %q)", got, tc.used, c.Version)
			}
			if !tc.used {
				if c.Version != probed.Version || strings.Join(c.Flags, " ") != strings.Join(probed.Flags, " ") {
					t.Fatalf("re-probe gave %+v, want %+v", c, probed)
				}
				// The re-probe replaced the bad memo with a valid one.
				if _, err := readMemo(memo, real); err != nil {
					t.Fatalf("memo not rewritten: %v", err)
				}
			}
		})
	}
}

// FuzzDecodeMemo checks that no memo content panics the decoder and that
// whatever it accepts carries only flags a probe could have produced.
func FuzzDecodeMemo(f *testing.F) {
	good, _ := json.Marshal(memoRecord{Path: "/usr/bin/cc", Version: "cc (GCC) 13.2.0", Target: "x86_64-linux-gnu", Flags: append(append([]string(nil), baseFlags...), "-march=native")})
	f.Add(good)
	f.Add([]byte(`{"Path":"/usr/bin/cc","Version":"v","Target":"","Flags":["-O0"]}`))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeMemo(data, "/usr/bin/cc")
		if err != nil {
			return
		}
		if c.Path != "/usr/bin/cc" || c.Version == "" || !probedFlags(c.Flags) || strings.ContainsAny(c.Version+c.Target, "\n\r\x00") {
			t.Fatalf("accepted invalid memo %q as %+v", data, c)
		}
	})
}
