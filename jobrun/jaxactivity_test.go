package jobrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// jaxKey is a JAX key for module.
func jaxKey(module string) string {
	h := sha256.Sum256([]byte(module))
	return module + "-" + hex.EncodeToString(h[:])
}

// TestRunJAXActivity runs a shell command that does to JAX's directory
// what JAX does (reads the entries it loads whole, writes a "-cache" file
// per compile it stores) and checks exec's report, its require-hit
// verdict and the environment it gave the command.
func TestRunJAXActivity(t *testing.T) {
	jaxViewRoot = t.TempDir()
	defer func() { jaxViewRoot = "/tmp" }()
	const (
		load    = `cat "$JAX_COMPILATION_CACHE_DIR"/*-cache >/dev/null; `
		compile = `printf x > "$JAX_COMPILATION_CACHE_DIR/` // + key + "-cache"
	)
	for _, tc := range []struct {
		name       string
		present    []string // modules in the directory before the run
		script     string
		requireHit config.RequireHit
		wantExit   int
		written    int
		loaded     int
		warmMiss   bool
		failed     string // a module the require-hit failure names
	}{
		{name: "cold run", script: compile + jaxKey("jit_f") + `-cache"`, written: 1},
		{name: "warm run loads", present: []string{"jit_f", "jit_g"}, script: load, loaded: 2, requireHit: config.RequireHitFail},
		{name: "warm run that loads nothing and compiles", present: []string{"jit_f"}, script: compile + jaxKey("jit_f2") + `-cache"`, written: 1, warmMiss: true},
		{name: "require-hit fail on a cold run", script: compile + jaxKey("jit_step") + `-cache"`, requireHit: config.RequireHitFail,
			written: 1, wantExit: RequireHitExitCode, failed: "jit_step"},
		{name: "require-hit warn only logs", script: compile + jaxKey("jit_step") + `-cache"`, requireHit: config.RequireHitWarn, written: 1},
		{name: "a load XLA refuses is a compile", present: []string{"jit_f"}, requireHit: config.RequireHitFail,
			script:   load + `echo "compiler.py:742: UserWarning: Error reading persistent compilation cache entry for 'jit_f': XlaRuntimeError: cpu feature mismatch" >&2`,
			wantExit: RequireHitExitCode, warmMiss: true, failed: "jit_f"},
		{name: "the command's own failure stands", script: compile + jaxKey("jit_step") + `-cache"; exit 3`, requireHit: config.RequireHitFail,
			written: 1, wantExit: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob(t, "")
			j.Target = xla.TargetJAX
			j.Opts.RequireHit = tc.requireHit
			j.Opts.MinEntrySize = 100
			past := time.Now().Add(-time.Hour)
			for _, m := range tc.present {
				data, err := jaxcache.Encode(jaxcache.CodecZlib, 2*time.Second, []byte("executable "+m))
				if err != nil {
					t.Fatal(err)
				}
				if err := jaxcache.WriteEntry(j.Opts.Dir, jaxKey(m), data, past, 0); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			j.Stdout, j.Stderr = &out, &out
			j.Args = []string{"sh", "-c", `echo "min=$JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS/$JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"; ` + tc.script}
			rep, err := j.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rep.ExitCode != tc.wantExit {
				t.Errorf("exit %d, want %d (%s)", rep.ExitCode, tc.wantExit, out.String())
			}
			a := rep.JAX
			if a == nil {
				t.Fatalf("no JAX activity reported (leader %v: %s)", rep.Leader, rep.LeaderWhy)
			}
			if !a.LoadsKnown() {
				t.Skipf("the test directory's filesystem keeps no access times (%s)", a.AtimeMode)
			}
			if len(a.Written) != tc.written || a.Loaded != tc.loaded || a.Present != len(tc.present) || a.WarmMiss() != tc.warmMiss {
				t.Errorf("activity %+v (warm miss %v), want %d written, %d loaded of %d, warm miss %v", a.RunActivity, a.WarmMiss(), tc.written, tc.loaded, len(tc.present), tc.warmMiss)
			}
			if tc.failed != "" && (len(rep.RequireHitFailed) != 1 || !strings.Contains(rep.RequireHitFailed[0], "JAX module "+tc.failed+" ")) {
				t.Errorf("require-hit failure names %q, want module %s", rep.RequireHitFailed, tc.failed)
			}
			if tc.failed == "" && len(rep.RequireHitFailed) > 0 {
				t.Errorf("require-hit failure %q, want none", rep.RequireHitFailed)
			}
			wantMin := "min=1/100"
			if tc.requireHit != config.RequireHitOff {
				wantMin = "min=0/0" // every compile stored, so that exec sees it
			}
			if !strings.Contains(out.String(), wantMin+"\n") {
				t.Errorf("command output %q, want %s", out.String(), wantMin)
			}
			if m := rep.Metrics(); m.JAX == nil || m.JAX.Written != tc.written || m.JAX.Host == "" {
				t.Errorf("metrics %+v", m.JAX)
			}
		})
	}
}
