package jaxtest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// How a case gets its environment.
const (
	modeEnvJAX = "env --target jax" // eval "$(xlacache env --target jax)"; python
	modeExec   = "exec"             // xlacache exec -- python
	modeEnvGo  = "env --target go"  // XLA_FLAGS for Go programs, given to JAX
)

// subcacheChoices are the XLACACHE_ENABLE_XLA_CACHES values tried: each
// keyword, and a list mixing an alias with XLA's own name.
var subcacheChoices = []string{"all", "none", "autotune", "kernels", "xla_gpu_kernel_cache_file,autotune"}

// singleFlags are every flag xlacache can put into XLA_FLAGS (backend/xla
// flags.go and versions.go: the autotune directory and mode, the kernel
// cache and its companion, and field 407 for probed plugins), each tried
// alone on each jaxlib, and a control that no XLA knows: it must abort, or
// the census could not tell "accepted" from "never parsed".
var singleFlags = []struct{ name, value string }{
	{"xla_gpu_per_fusion_autotune_cache_dir", "$DIR/xla_gpu_per_fusion_autotune_cache_dir"},
	{"xla_gpu_experimental_autotune_cache_mode", "AUTOTUNE_CACHE_MODE_UPDATE"},
	{"xla_gpu_experimental_autotune_cache_mode", "AUTOTUNE_CACHE_MODE_READ"},
	{"xla_gpu_kernel_cache_file", "$DIR/xla_gpu_kernel_cache_file"},
	{"xla_gpu_enable_llvm_module_compilation_parallelism", "true"},
	{"xla_gpu_experimental_autotuner_cache_dir", "$DIR/xla_gpu_per_fusion_autotune_cache_dir"},
	{controlFlag, "1"},
}

const controlFlag = "xla_jaxtest_no_such_flag"

// census collects, per jaxlib, what each flag did and who set it.
type census struct {
	mu     sync.Mutex
	status map[string]map[string]string          // jaxlib -> flag=value -> accepted/aborts
	setBy  map[string]map[string]map[string]bool // jaxlib -> flag -> modes that set it
	envs   map[string]int                        // jaxlib -> distinct environments run
	// goAborts are the `env --target go` cases XLA refused, per jaxlib:
	// that environment is for Go programs, so it is recorded, not failed
	// here (a Go program loading the same XLA would abort alike).
	goAborts map[string][]string
	cases    map[string]int // jaxlib -> cases
}

func (c *census) note(jl, flagName, mode string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.setBy[jl] == nil {
		c.setBy[jl] = map[string]map[string]bool{}
	}
	if c.setBy[jl][flagName] == nil {
		c.setBy[jl][flagName] = map[string]bool{}
	}
	c.setBy[jl][flagName][mode] = true
}

// flagNames are the flag names in an XLA_FLAGS value (xlacache's values
// here have no spaces: the directories are test temp dirs).
func flagNames(xlaFlags string) []string {
	var names []string
	for _, f := range strings.Fields(xlaFlags) {
		n, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
		names = append(names, n)
	}
	return names
}

// tcase is one combination of issue 21's test 1.
type tcase struct {
	mode, sub, stated string
	index             int
}

func (c tcase) name() string {
	v := c.stated
	if v == "" {
		v = "unstated"
	}
	return fmt.Sprintf("%s/%s/p%d/%s", strings.ReplaceAll(c.mode, " ", "_"), strings.ReplaceAll(c.sub, ",", "+"), c.index, v)
}

func (c tcase) args(bin string) []string {
	a := []string{}
	switch c.mode {
	case modeEnvJAX:
		a = append(a, "env", "--shell", "json", "--target", "jax")
	case modeEnvGo:
		a = append(a, "env", "--shell", "json", "--target", "go")
	case modeExec:
		a = append(a, "exec")
	}
	a = append(a, "--process-index", fmt.Sprint(c.index))
	if c.stated != "" {
		a = append(a, "--jaxlib-version", c.stated)
	}
	return a
}

// environment returns what c gives a process whose cache directory is
// dir: the variables xlacache sets (env), or for exec those the command
// saw (from the cheap testdata/env.py probe).
func (c tcase) environment(t *testing.T, bin, py, dir string) (map[string]string, error) {
	base := cleanEnv("XLACACHE_DIR="+dir, "XLACACHE_ENABLE_XLA_CACHES="+c.sub)
	if c.mode == modeExec {
		r := runCmd(t, base, bin, append(c.args(bin), "--", py, testdata(t, "env.py"))...)
		if r.err != nil || r.exitCode != 0 {
			return nil, fmt.Errorf("exec probe: exit %d %v\n%s", r.exitCode, r.err, tail(r.stderr, 2000))
		}
		env := map[string]string{}
		return env, line(r.stdout, "JAXTEST_ENV", &env)
	}
	r := runCmd(t, base, bin, c.args(bin)...)
	if r.err != nil || r.exitCode != 0 {
		return nil, fmt.Errorf("xlacache %v: exit %d %v\n%s", c.args(bin), r.exitCode, r.err, tail(r.stderr, 2000))
	}
	var out struct {
		Env map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		return nil, fmt.Errorf("xlacache env --shell json: %w", err)
	}
	return out.Env, nil
}

// jaxLink matches the link exec gives JAX for its directory
// (jobrun/jaxview.go), named after the bucket or the directory.
var jaxLink = regexp.MustCompile(`/tmp/xlacache-[0-9]+/jax-(d-)?[0-9a-f]{16}`)

// keyOf is env with dir written as $DIR and exec's link for JAX as
// $JAXLINK, as one comparable string.
func keyOf(env map[string]string, dir string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, jaxLink.ReplaceAllString(strings.ReplaceAll(env[k], dir, "$DIR"), "$$JAXLINK"))
	}
	return b.String()
}

// TestFlagsNeverAbort is issue 21's test 1: for each installed jaxlib, a
// real JAX process started with exactly the environment `xlacache env
// --target jax` gives, and under `xlacache exec` for real, for every
// subcache choice, both roles and --jaxlib-version unstated or stated
// wrong both ways, creates its backend and compiles and runs a jit. An
// unknown flag in XLA_FLAGS kills a JAX process outright. The environment
// `env --target go` gives (for Go programs) is tried on JAX too, and each
// flag xlacache can emit alone: together they make the census of
// testdata/census.md (docs/xla.md).
//
// Cases whose environments are identical but for the directory run JAX
// once: the JAX process could not tell them apart.
func TestFlagsNeverAbort(t *testing.T) {
	cen := &census{status: map[string]map[string]string{}, setBy: map[string]map[string]map[string]bool{},
		envs: map[string]int{}, cases: map[string]int{}, goAborts: map[string][]string{}}
	installed := 0
	t.Run("jaxlib", func(t *testing.T) {
		for _, jl := range jaxlibs {
			t.Run(jl.version, func(t *testing.T) {
				t.Parallel()
				py := testneed.PeerPython(t, jl.list)
				bin := xlacacheBin(t)
				cen.mu.Lock()
				installed++
				cen.mu.Unlock()
				flagsNeverAbort(t, jl, bin, py, cen)
			})
		}
	})
	if installed < len(jaxlibs) || t.Failed() {
		return // the census is written only from a complete, passing run
	}
	got := cen.markdown()
	path := filepath.Join("testdata", "census.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("census changed (rerun with -update and copy it into docs/xla.md):\n--- want\n%s\n--- got\n%s", want, got)
	}
}

func flagsNeverAbort(t *testing.T, jl jaxlib, bin, py string, cen *census) {
	var cases []tcase
	for _, mode := range []string{modeEnvJAX, modeExec, modeEnvGo} {
		for _, sub := range subcacheChoices {
			for _, idx := range []int{0, 1} {
				for _, stated := range []string{"", jl.older, jl.newer} {
					cases = append(cases, tcase{mode: mode, sub: sub, index: idx, stated: stated})
				}
			}
		}
	}
	// Work out every case's environment (cheap), then run JAX once per
	// distinct one.
	type group struct {
		cases []tcase
		env   map[string]string
	}
	groups := map[string]*group{}
	var order []string
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "cache")
		env, err := c.environment(t, bin, py, dir)
		if err != nil {
			t.Errorf("%s: %v", c.name(), err)
			continue
		}
		k := c.mode + "\n" + keyOf(env, dir)
		if groups[k] == nil {
			groups[k] = &group{env: env}
			order = append(order, k)
		}
		groups[k].cases = append(groups[k].cases, c)
		for _, n := range flagNames(env["XLA_FLAGS"]) {
			cen.note(jl.version, n, c.mode)
		}
	}
	cen.mu.Lock()
	cen.envs[jl.version] += len(order)
	cen.cases[jl.version] += len(cases)
	cen.mu.Unlock()
	t.Logf("jaxlib %s: %d cases, %d distinct environments", jl.version, len(cases), len(order))

	t.Run("case", func(t *testing.T) {
		for _, k := range order {
			g := groups[k]
			c := g.cases[0]
			t.Run(c.name(), func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join(t.TempDir(), "cache")
				var names []string
				for _, c := range g.cases {
					names = append(names, c.name())
				}
				var r run
				if c.mode == modeExec {
					r = runCmd(t, cleanEnv("XLACACHE_DIR="+dir, "XLACACHE_ENABLE_XLA_CACHES="+c.sub),
						bin, append(c.args(bin), "--", py, testdata(t, "jit.py"))...)
				} else {
					env := map[string]string{}
					for k, v := range g.env {
						env[k] = strings.ReplaceAll(v, g.env["XLACACHE_DIR"], dir)
					}
					r = runCmd(t, merge(cleanEnv(), env), py, testdata(t, "jit.py"))
				}
				res, err := checkRun(r, jl)
				if err != nil && c.mode == modeEnvGo && strings.Contains(r.stderr, "Unknown flag") {
					refused := ""
					for _, l := range strings.Split(r.stderr, "\n") {
						if _, f, ok := strings.Cut(l, "Unknown flag in XLA_FLAGS: "); ok {
							refused = "--" + strings.Join(flagNames(f), " --") // names only: values hold temp paths
						}
					}
					cen.mu.Lock()
					for _, n := range names {
						cen.goAborts[jl.version] = append(cen.goAborts[jl.version], "`"+strings.TrimPrefix(n, "env_--target_go/")+"` ("+refused+")")
					}
					cen.mu.Unlock()
					t.Logf("env --target go: JAX aborted: %s (cases %v)", refused, names)
					// Only a wrong stated version may abort: with none stated
					// xlacache assumes a release, and the assumption must be
					// safe on every XLA, the newest included.
					for _, c := range g.cases {
						if c.stated == "" {
							t.Errorf("%s: with no version stated, env --target go gave a flag jaxlib %s refuses (%s)", c.name(), jl.version, refused)
						}
					}
					return
				}
				if err != nil {
					t.Fatalf("cases %v\nenvironment:\n%s\n%v", names, keyOf(g.env, g.env["XLACACHE_DIR"]), err)
				}
				if c.mode == modeExec {
					// The real run saw what the probe saw.
					probe := g.env
					if a, b := keyOf(res.Env, dir), keyOf(probe, probe["XLACACHE_DIR"]); a != b {
						t.Errorf("exec gave JAX\n%s\nbut the probe\n%s", a, b)
					}
				}
			})
		}
	})

	t.Run("flag", func(t *testing.T) {
		for _, f := range singleFlags {
			t.Run(f.name+"="+f.value, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				arg := "--" + f.name + "=" + strings.ReplaceAll(f.value, "$DIR", dir)
				r := runCmd(t, cleanEnv("XLA_FLAGS="+arg), py, testdata(t, "jit.py"))
				_, err := checkRun(r, jl)
				status := "accepted"
				if err != nil {
					if !strings.Contains(r.stderr, "Unknown flag") {
						t.Fatalf("XLA_FLAGS=%s: failed, but not on an unknown flag: %v", arg, err)
					}
					status = "aborts"
				}
				if f.name == controlFlag && status != "aborts" {
					t.Errorf("XLA_FLAGS=%s was accepted: this jaxlib does not abort on unknown flags, the census cannot tell", arg)
				}
				cen.mu.Lock()
				if cen.status[jl.version] == nil {
					cen.status[jl.version] = map[string]string{}
				}
				cen.status[jl.version][f.name+"="+f.value] = status
				cen.mu.Unlock()
			})
		}
	})
}

// checkRun says what is wrong with a run of jit.py, naming the flag XLA
// refused when it aborted on one.
func checkRun(r run, jl jaxlib) (jaxResult, error) {
	var res jaxResult
	if r.err != nil || r.exitCode != 0 {
		msg := ""
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, "Unknown flag") {
				msg = "XLA refused a flag: " + strings.TrimSpace(l) + "\n"
			}
		}
		return res, fmt.Errorf("%sexit %d %v\nstderr: %s", msg, r.exitCode, r.err, tail(r.stderr, 3000))
	}
	if err := line(r.stdout, "JAXTEST", &res); err != nil {
		return res, fmt.Errorf("%v\nstdout: %s\nstderr: %s", err, tail(r.stdout, 2000), tail(r.stderr, 2000))
	}
	return res, res.check(jl)
}

// markdown renders the census.
func (c *census) markdown() string {
	var b strings.Builder
	b.WriteString("<!-- Generated by `go test ./xla/jaxtest -run TestFlagsNeverAbort -update`; do not edit. -->\n")
	b.WriteString("Each flag alone in `XLA_FLAGS` of a real JAX process that creates its CPU backend and compiles and runs a jit; ")
	b.WriteString("\"set by\": which xlacache environments put it in `XLA_FLAGS` for some subcache choice, role or stated `--jaxlib-version`.\n\n")
	b.WriteString("| flag in `XLA_FLAGS` |")
	for _, jl := range jaxlibs {
		fmt.Fprintf(&b, " jaxlib %s |", jl.version)
	}
	b.WriteString("\n|---|")
	for range jaxlibs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, f := range singleFlags {
		name := "`--" + f.name + "=" + f.value + "`"
		if f.name == controlFlag {
			name += " (control: no XLA knows it)"
		}
		fmt.Fprintf(&b, "| %s |", name)
		for _, jl := range jaxlibs {
			cell := c.status[jl.version][f.name+"="+f.value]
			var modes []string
			for m := range c.setBy[jl.version][f.name] {
				modes = append(modes, m)
			}
			slices.Sort(modes)
			if len(modes) > 0 {
				cell += "; set by " + strings.Join(modes, ", ")
			} else if f.name != controlFlag {
				cell += "; never set by xlacache"
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, jl := range jaxlibs {
		a := slices.Clone(c.goAborts[jl.version])
		slices.Sort(a)
		if len(a) == 0 {
			continue
		}
		fmt.Fprintf(&b, "`env --target go` (for Go programs) given to JAX with jaxlib %s aborts in %d cases (subcaches/process/stated version, refused flag):\n", jl.version, len(a))
		for _, x := range a {
			fmt.Fprintf(&b, "- %s\n", x)
		}
		b.WriteString("\n")
	}
	for _, jl := range jaxlibs {
		fmt.Fprintf(&b, "jaxlib %s: %d cases (`env --target jax`, `exec`, `env --target go` × %d subcache choices × process 0 and 1 × `--jaxlib-version` unstated, %s, %s), %d distinct environments; every one from `env --target jax` and `exec` started JAX and ran the jit.\n",
			jl.version, c.cases[jl.version], len(subcacheChoices), jl.older, jl.newer, c.envs[jl.version])
	}
	return b.String()
}
