package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// runAdminCLI runs the root command in-process with args and returns stdout and
// the exit code main would use.
func runAdminCLI(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	for _, k := range []string{config.EnvDir, config.EnvMaxSize, config.EnvSigningKey, config.EnvRole, config.EnvProcessIndex, "RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK"} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	out, stderr, err := execCLI(t, args...)
	errb := bytes.NewBufferString(stderr)
	code := cli.ExitCode("xlacache", err, errb)
	if testing.Verbose() {
		t.Logf("xlacache %s -> %d\n%s%s", strings.Join(args, " "), code, out, errb.String())
	}
	return out, code
}

// goNameKey matches a JSON key in Go's field-name style ("MaxSize").
var goNameKey = regexp.MustCompile(`"[A-Z][A-Za-z]*":`)

// checkJSONKeys fails unless the JSON text out has only snake_case keys
// (the documented ones) and contains each of want.
func checkJSONKeys(t *testing.T, out string, want ...string) {
	t.Helper()
	if k := goNameKey.FindString(out); k != "" {
		t.Errorf("JSON key %s is not snake_case:\n%s", k, out)
	}
	for _, w := range want {
		if !strings.Contains(out, `"`+w+`":`) {
			t.Errorf("JSON lacks key %q:\n%s", w, out)
		}
	}
}

// populateAdmin writes a few entries through the library.
func populateAdmin(t *testing.T, dir string) []string {
	t.Helper()
	o := config.Defaults()
	o.Dir, o.MinCompileTime = dir, 0
	c, err := cache.Open(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, tier := range []string{"executables", "executables", "cpu/kernels"} {
		k := cache.NewKey("jit_f", []cache.KeyPart{{Name: "program", Data: []byte{byte(i)}}, {Name: "options", Data: []byte("o")}})
		if err := c.Tier(tier).Put(context.Background(), k, bytes.Repeat([]byte("payload"), 100), 1e9); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.String())
	}
	c.Tier("executables").Get(context.Background(), cache.NewKey("jit_f", []cache.KeyPart{{Name: "program", Data: []byte{0}}, {Name: "options", Data: []byte("o")}}))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestCLIStatsLsVerify(t *testing.T) {
	dir := t.TempDir()
	keys := populateAdmin(t, dir)
	env := map[string]string{config.EnvDir: dir}

	out, code := runAdminCLI(t, env, "stats")
	if code != 0 || !strings.Contains(out, "executables") || !strings.Contains(out, "hits 1") {
		t.Errorf("stats (%d): %s", code, out)
	}
	out, code = runAdminCLI(t, nil, "stats", "--json", "--dir", dir)
	var sr shareddir.Stats
	if code != 0 || json.Unmarshal([]byte(out), &sr) != nil || sr.Areas["executables"].Entries != 2 || sr.Areas["cpu/kernels"].Entries != 1 || sr.Counters.Hits != 1 {
		t.Errorf("stats --json (%d): %s", code, out)
	}
	checkJSONKeys(t, out, "dir", "max_size", "areas", "entries", "counters", "shared_hits", "compile_time_saved_ns", "tiers", "total")
	out, code = runAdminCLI(t, env, "ls", "--json")
	var ls []cache.EntryInfo
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil || len(ls) != 3 {
		t.Fatalf("ls --json (%d): %s", code, out)
	}
	checkJSONKeys(t, out, "tier", "key", "path", "size", "raw_size", "compile_time_ns", "created", "last_used", "signed", "codec")
	out, _ = runAdminCLI(t, env, "ls")
	for _, k := range keys {
		if !strings.Contains(out, k) {
			t.Errorf("ls does not list %s", k)
		}
	}
	out, code = runAdminCLI(t, env, "verify", "--json")
	var vr verifyReport
	if code != 0 || json.Unmarshal([]byte(out), &vr) != nil || vr.Checked != 3 || len(vr.Bad) != 0 {
		t.Errorf("verify (%d): %s", code, out)
	}
	// Damage one entry: verify exits 1, --repair quarantines it.
	data, _ := os.ReadFile(ls[0].Path)
	data[len(data)-10] ^= 1
	os.WriteFile(ls[0].Path, data, 0o600)
	out, code = runAdminCLI(t, env, "verify")
	if code != 1 || !strings.Contains(out, "BAD") {
		t.Errorf("verify damaged (%d): %s", code, out)
	}
	out, code = runAdminCLI(t, env, "verify", "--repair", "--json")
	if code != 1 || json.Unmarshal([]byte(out), &vr) != nil || len(vr.Bad) != 1 || vr.Bad[0].Quarantined == "" {
		t.Errorf("verify --repair (%d): %s", code, out)
	}
	checkJSONKeys(t, out, "dir", "checked", "bad", "tier", "path", "error", "kind", "quarantined")
	if _, code = runAdminCLI(t, env, "verify"); code != 0 {
		t.Errorf("verify after repair: %d", code)
	}
}

func TestCLIExplainPruneClear(t *testing.T) {
	dir := t.TempDir()
	keys := populateAdmin(t, dir)
	env := map[string]string{config.EnvDir: dir}
	out, code := runAdminCLI(t, env, "explain", keys[0])
	if code != 0 || !strings.Contains(out, "differs in: program") {
		t.Errorf("explain key (%d): %s", code, out)
	}
	other := cache.NewKey("jit_f", []cache.KeyPart{{Name: "program", Data: []byte{0}}, {Name: "options", Data: []byte("p")}})
	out, code = runAdminCLI(t, env, "explain", "--json", other.String())
	var x cache.Explanation
	if code != 0 || json.Unmarshal([]byte(out), &x) != nil || x.Present || x.Candidates != 2 {
		t.Errorf("explain absent key (%d): %s", code, out)
	}
	checkJSONKeys(t, out, "key", "present", "candidates", "closest", "differs")
	// A program file with a registered backend.
	explainBackends["testfake"] = func() cache.Backend { return adminPartsBackend{} }
	defer delete(explainBackends, "testfake")
	prog := filepath.Join(t.TempDir(), "jit_f.mlir")
	os.WriteFile(prog, []byte{1}, 0o600)
	out, code = runAdminCLI(t, env, "explain", "--backend", "testfake", prog)
	if code != 0 || !strings.Contains(out, "differs in: options") {
		t.Errorf("explain file (%d): %s", code, out)
	}
	if _, code = runAdminCLI(t, env, "explain", "--backend", "nope", prog); code != 2 {
		t.Errorf("unknown backend: exit %d", code)
	}
	if _, code = runAdminCLI(t, env, "explain", "not-a-key-or-file"); code != 2 {
		t.Errorf("bad argument: exit %d", code)
	}

	if _, code = runAdminCLI(t, env, "prune"); code != 2 {
		t.Errorf("prune without size: exit %d", code)
	}
	if _, code = runAdminCLI(t, env, "prune", "--max-size", "10XB"); code != 2 {
		t.Errorf("prune bad size: exit %d", code)
	}
	out, code = runAdminCLI(t, env, "prune", "--max-size", "1KB", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove") {
		t.Errorf("prune dry run (%d): %s", code, out)
	}
	out, code = runAdminCLI(t, env, "prune", "--max-size", "1KB")
	if code != 0 {
		t.Errorf("prune (%d): %s", code, out)
	}
	u, _ := cache.Scan(context.Background(), dir)
	if u.Bytes > 1000 {
		t.Errorf("after prune %d bytes", u.Bytes)
	}
	os.WriteFile(filepath.Join(dir, "mine.txt"), nil, 0o600)
	if _, code = runAdminCLI(t, env, "clear"); code != 0 {
		t.Errorf("clear: %d", code)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "mine.txt" {
		t.Errorf("clear left %v", left)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"nosuchcmd"}, {"--nosuchflag"}, {"stats", "--nosuchflag"}, {"stats", "extra"}, {"explain"},
		{"run"}, {"run", "a.mlir", "b.mlir"}, {"conformance"}, {"demo", "extra"}, {"env", "extra"}, {"prune", "--max-size"}} {
		if _, code := runAdminCLI(t, map[string]string{config.EnvDir: dir}, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// An unknown command gets cobra's message, suggestions included.
	_, _, err := execCLI(t, "stat")
	var ue cli.UsageError
	if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), `unknown command "stat" for "xlacache"`) || !strings.Contains(err.Error(), "Did you mean this?\n\tstats\n") {
		t.Errorf("unknown command: %q", err)
	}
	// Without a command, the help.
	if out, _, err := execCLI(t, "-v"); err != nil || !strings.Contains(out, "Available Commands:") {
		t.Errorf("no command: %v\n%s", err, out)
	}
	if _, code := runAdminCLI(t, map[string]string{config.EnvDir: dir, config.EnvRole: "boss"}, "stats"); code != 2 {
		t.Errorf("bad XLACACHE_ROLE: exit %d, want 2", code)
	}
	// A missing directory is an empty cache (issue 20 item 8); a file
	// where the directory should be is a failure.
	if _, code := runAdminCLI(t, nil, "stats", "--dir", filepath.Join(dir, "missing")); code != 0 {
		t.Errorf("missing dir: exit %d, want 0", code)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, code := runAdminCLI(t, nil, "stats", "--dir", notDir); code != 1 {
		t.Errorf("a file as the directory: exit %d, want 1", code)
	}
	if cli.ExitCode("xlacache", nil, io.Discard) != 0 {
		t.Error("nil error exit code")
	}
}

// adminPartsBackend computes key parts like populateAdmin's entries: program byte 1,
// options "q" (so the closest entry differs in options).
type adminPartsBackend struct{}

func (adminPartsBackend) Name() string { return "testfake" }
func (adminPartsBackend) KeyParts(_ context.Context, p cache.Program) ([]cache.KeyPart, error) {
	return []cache.KeyPart{{Name: "program", Data: p.Text}, {Name: "options", Data: []byte("q")}}, nil
}
func (adminPartsBackend) Compile(context.Context, cache.Program, *cache.Session) (cache.Executable, error) {
	return nil, io.EOF
}
func (adminPartsBackend) Load(context.Context, []byte, *cache.Session) (cache.Executable, error) {
	return nil, io.EOF
}
