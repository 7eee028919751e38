package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's configuration table from Docs")

const (
	tableBegin = "<!-- config-table:begin"
	tableEnd   = "<!-- config-table:end -->"
)

// TestREADMEConfigTable fails when the README's configuration table is not
// the one MarkdownTable makes from Docs; -update rewrites it.
func TestREADMEConfigTable(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, tableBegin)
	j := strings.Index(s, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q block", path, tableBegin, tableEnd)
	}
	i += strings.Index(s[i:], "\n") + 1
	if got, want := s[i:j], MarkdownTable(); got != want {
		if !*update {
			t.Fatalf("%s's configuration table differs from config.Docs; run go test ./config -run TestREADMEConfigTable -update\ngot:\n%s\nwant:\n%s", path, got, want)
		}
		if err := os.WriteFile(path, []byte(s[:i]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEnvSettingsCoverDocs checks that `xlacache env` shows every
// XLACACHE_* variable of the table, options and variables read elsewhere
// alike, and that every option Settings knows has a row.
func TestEnvSettingsCoverDocs(t *testing.T) {
	o, err := FromEnv(func(name string) (string, bool) {
		v, ok := map[string]string{EnvCC: "clang-19", EnvSharedURL: "s3://AKIAX:hunter2@bucket/p?endpoint=http://h&X-Amz-Signature=abc"}[name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Setting{}
	for _, s := range EnvSettings(o, func(n string) (string, bool) {
		if n == EnvCC {
			return "clang-19", true
		}
		return "", false
	}) {
		got[s.Name] = s
	}
	for _, d := range Docs {
		if strings.HasPrefix(d.Names[0], "XLACACHE_") {
			if s, ok := got[d.Names[0]]; !ok || s.Help == "" {
				t.Errorf("env does not show %s", d.Names[0])
			}
		}
	}
	for _, s := range o.Settings() {
		if _, ok := got[s.Name]; !ok {
			t.Errorf("option %s has no row in Docs", s.Name)
		}
	}
	for _, name := range []string{EnvCC, EnvSigningKeyFile, EnvXLAVersion, EnvXLAPlugin} {
		if _, ok := got[name]; !ok {
			t.Errorf("env omits %s", name)
		}
	}
	if s := got[EnvCC]; s.Value != "clang-19" || s.Source != SourceEnv {
		t.Errorf("XLACACHE_CC: %+v", s)
	}
	if s := got[EnvEnableXLA]; !strings.HasPrefix(s.Value, "all (cpu backend") {
		t.Errorf("XLACACHE_ENABLE_XLA_CACHES shows %q, not the cpu backend's default all", s.Value)
	}
	if s := got[EnvSharedURL]; strings.Contains(s.Value, "hunter2") || strings.Contains(s.Value, "=abc") || !strings.Contains(s.Value, "bucket/p") {
		t.Errorf("shared URL not redacted: %q", s.Value)
	}
}
