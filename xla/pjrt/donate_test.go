package pjrt

// Buffer donation through the wrapper, against the real plugins: an
// executable the wrapper hands out (the inner compile's on a miss, a
// deserialized one on a hit) must donate and alias its inputs exactly as
// the plain plugin's does. A wrapper that silently lost the program's
// input/output alias, or donation, would double the memory of every
// caller that donates its state (training loops, JAX's donate_argnums).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// donateProgram's main aliases its first argument to output 0.
const donateProgram = "testdata/donate.mlir"

var (
	donateOnce   sync.Once
	donateRunner string // the built testdata/pjrtdonate
	donateErr    error
)

// donation is one execution as testdata/pjrtdonate reports it.
type donation struct {
	Donated     bool   `json:"donated"`
	InputsAlive []bool `json:"inputs_alive"`
	InPlace     bool   `json:"in_place"`
}

type donateReport struct {
	Plugin   string     `json:"plugin"`
	Runs     []donation `json:"runs"`
	Counters []uint64   `json:"counters"`
	Stderr   string     `json:"-"`
}

// runDonate runs testdata/pjrtdonate on donateProgram as h's host and
// returns its report.
func runDonate(t *testing.T, h host) donateReport {
	t.Helper()
	tools(t) // toolDir, removed by TestMain
	donateOnce.Do(func() {
		donateRunner = filepath.Join(toolDir, "pjrtdonate")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", donateRunner, "./testdata/pjrtdonate").CombinedOutput(); err != nil {
			donateErr = fmt.Errorf("building testdata/pjrtdonate: %v: %s", err, out)
		}
	})
	if donateErr != nil {
		t.Fatal(donateErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	prog, err := filepath.Abs(donateProgram)
	if err != nil {
		t.Fatal(err)
	}
	plugin := "cpu"
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XLACACHE_") && !strings.HasPrefix(kv, "PJRT_") {
			env = append(env, kv)
		}
	}
	if h.dir == "" {
		plugin = h.inner
	} else {
		env = append(env, "PJRT_PLUGIN_LIBRARY_PATH="+h.dir, EnvInner+"="+h.inner, EnvSocket+"="+h.socket)
	}
	cmd := exec.CommandContext(ctx, donateRunner, "-plugin", plugin, prog)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pjrtdonate: %v\n%s", err, stderr.String())
	}
	var r donateReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("pjrtdonate output %q: %v", stdout.String(), err)
	}
	r.Stderr = stderr.String()
	return r
}

// The plain plugin, the wrapper with an empty cache (the inner compile's
// executable) and the wrapper in a new process (the executable
// deserialized from the cache) donate alike: without donation both inputs
// stay readable and output 0 is a new buffer; with donation both inputs
// are consumed and output 0 is written in place of the aliased input.
func TestRealDonationSurvivesTheCache(t *testing.T) {
	want := []donation{
		{Donated: false, InputsAlive: []bool{true, true}, InPlace: false},
		{Donated: true, InputsAlive: []bool{false, false}, InPlace: true},
	}
	for name, inner := range realPlugins(t) {
		t.Run(name, func(t *testing.T) {
			plain := runDonate(t, host{inner: inner})
			// The plain plugin's own behaviour is the reference; check it
			// is the one this test is about, so that a plugin that never
			// donates cannot make the comparison below vacuous.
			if !reflect.DeepEqual(plain.Runs, want) {
				t.Fatalf("plain plugin: runs %+v; want %+v", plain.Runs, want)
			}
			sock := serve(t, &Server{Cache: openCache(t, t.TempDir())})
			h := wrapped(t, inner, sock)
			for _, pass := range []struct {
				name                              string
				compiles, hits, fallbacks, stored uint64
			}{
				{"cold", 1, 0, 0, 1},
				{"warm", 0, 1, 0, 0},
			} {
				r := runDonate(t, h)
				expect(t, pass.name, runReport{Counters: r.Counters, Stderr: r.Stderr},
					pass.compiles, pass.hits, pass.fallbacks, pass.stored)
				if !reflect.DeepEqual(r.Runs, plain.Runs) {
					t.Errorf("%s through the wrapper: runs %+v; the plain plugin's %+v", pass.name, r.Runs, plain.Runs)
				}
			}
		})
	}
}
