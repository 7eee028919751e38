package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/sign"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	o := Defaults()
	if o.MinCompileTime != time.Second || o.MinEntrySize != 0 || o.MaxSize != 0 {
		t.Errorf("thresholds: %v %d %d", o.MinCompileTime, o.MinEntrySize, o.MaxSize)
	}
	if !reflect.DeepEqual(o.Subcaches, []Subcache{SubcacheAutotune}) || o.SubcachesExplicit {
		t.Errorf("subcaches: %v explicit=%v", o.Subcaches, o.SubcachesExplicit)
	}
	if o.Role != RoleAuto || !o.Writer() || o.Enabled() {
		t.Errorf("role %v writer %v enabled %v", o.Role, o.Writer(), o.Enabled())
	}
	if o.DirMode != 0o700 || o.FileMode != 0o600 || o.WaitTimeout != 120*time.Second {
		t.Errorf("modes %o %o wait %v", o.DirMode, o.FileMode, o.WaitTimeout)
	}
	for _, name := range allEnvVars {
		if o.Sources[name] != SourceDefault {
			t.Errorf("source of %s = %q", name, o.Sources[name])
		}
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFromEnvValues(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, o Options)
	}{
		{"empty is off", map[string]string{}, func(t *testing.T, o Options) {
			if o.Enabled() {
				t.Error("enabled without dir")
			}
		}},
		{"blank dir is off", map[string]string{EnvDir: "  "}, func(t *testing.T, o Options) {
			if o.Enabled() || o.Sources[EnvDir] != SourceDefault {
				t.Errorf("dir %q source %q", o.Dir, o.Sources[EnvDir])
			}
		}},
		{"all set", map[string]string{
			EnvDir: "/tmp/x", EnvEnableXLA: "all", EnvMinCompileTime: "0.5", EnvMinEntrySize: "1KiB",
			EnvMaxSize: "10GiB", EnvProcessIndex: "3", EnvRole: "writer", EnvExplainMisses: "yes",
			EnvDirMode: "0750", EnvFileMode: "640", EnvWaitSecs: "7", EnvSharedURL: "s3://b/p", EnvSigningKey: "k",
		}, func(t *testing.T, o Options) {
			want := Options{Dir: "/tmp/x", Subcaches: []Subcache{SubcacheAutotune, SubcacheKernels}, SubcachesExplicit: true, BinarySizes: true, // 10GiB
				MinCompileTime: 500 * time.Millisecond, MinEntrySize: 1024, MaxSize: 10 << 30, ProcessIndex: 3,
				Role: RoleWriter, ExplainMisses: true, DirMode: 0o750, FileMode: 0o640, WaitTimeout: 7 * time.Second,
				SharedURL: "s3://b/p", SigningKey: sign.NewHMAC([]byte("k"))}
			o.Sources = nil
			if !reflect.DeepEqual(o, want) {
				t.Errorf("got %+v\nwant %+v", o, want)
			}
			if !o.Writer() {
				t.Error("explicit writer at index 3 must write")
			}
		}},
		{"none", map[string]string{EnvEnableXLA: "none"}, func(t *testing.T, o Options) {
			if len(o.Subcaches) != 0 || !o.SubcachesExplicit || o.HasSubcache(SubcacheAutotune) {
				t.Errorf("subcaches %v", o.Subcaches)
			}
		}},
		{"aliases", map[string]string{EnvEnableXLA: "kernels, autotune"}, func(t *testing.T, o Options) {
			if !o.HasSubcache(SubcacheKernels) || !o.HasSubcache(SubcacheAutotune) {
				t.Errorf("subcaches %v", o.Subcaches)
			}
		}},
		{"jax unbounded", map[string]string{EnvMaxSize: "-1"}, func(t *testing.T, o Options) {
			if o.MaxSize != 0 {
				t.Errorf("max %d", o.MaxSize)
			}
		}},
		{"rank fallback", map[string]string{"SLURM_PROCID": "2", "RANK": "5"}, func(t *testing.T, o Options) {
			if o.ProcessIndex != 2 || o.Writer() || o.Sources[EnvProcessIndex] != "env:SLURM_PROCID" {
				t.Errorf("index %d source %q", o.ProcessIndex, o.Sources[EnvProcessIndex])
			}
		}},
		{"explicit index beats rank", map[string]string{EnvProcessIndex: "0", "RANK": "5"}, func(t *testing.T, o Options) {
			if o.ProcessIndex != 0 || !o.Writer() {
				t.Errorf("index %d", o.ProcessIndex)
			}
		}},
		{"reader at 0", map[string]string{EnvRole: "reader"}, func(t *testing.T, o Options) {
			if o.Writer() {
				t.Error("reader writes")
			}
		}},
		{"key file", map[string]string{EnvSigningKeyFile: keyFile}, func(t *testing.T, o Options) {
			if !o.SigningKey.Equal(sign.NewHMAC([]byte("s3cret"))) {
				t.Errorf("key %v", o.SigningKey)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := FromEnv(envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

func TestFromEnvErrors(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want []string // substrings the error must contain
	}{
		{map[string]string{EnvEnableXLA: "autotun"}, []string{EnvEnableXLA, `"autotun"`, "unknown subcache"}},
		{map[string]string{EnvEnableXLA: "xla_gpu_per_fusion_autotune_cache"}, []string{"unknown subcache"}},
		{map[string]string{EnvEnableXLA: "all,kernels"}, []string{"cannot be combined"}},
		{map[string]string{EnvEnableXLA: "autotune,,kernels"}, []string{"empty name"}},
		{map[string]string{EnvMinCompileTime: "fast"}, []string{EnvMinCompileTime, `"fast"`}},
		{map[string]string{EnvMinCompileTime: "-1"}, []string{EnvMinCompileTime, "negative"}},
		{map[string]string{EnvMinCompileTime: "NaN"}, []string{EnvMinCompileTime, "finite"}},
		{map[string]string{EnvMinEntrySize: "-5"}, []string{EnvMinEntrySize, "negative"}},
		{map[string]string{EnvMaxSize: "10XB"}, []string{EnvMaxSize, "unknown unit"}},
		{map[string]string{EnvMaxSize: "99999999999TiB"}, []string{EnvMaxSize, "overflows"}},
		{map[string]string{EnvMaxSize: "GiB"}, []string{EnvMaxSize, "number"}},
		{map[string]string{EnvProcessIndex: "one"}, []string{EnvProcessIndex, `"one"`}},
		{map[string]string{EnvProcessIndex: "-1"}, []string{EnvProcessIndex, "negative"}},
		{map[string]string{"OMPI_COMM_WORLD_RANK": "x"}, []string{"OMPI_COMM_WORLD_RANK", `"x"`}},
		{map[string]string{EnvRole: "boss"}, []string{EnvRole, `"boss"`}},
		{map[string]string{EnvExplainMisses: "maybe"}, []string{EnvExplainMisses, `"maybe"`}},
		{map[string]string{EnvDirMode: "rwx"}, []string{EnvDirMode, "octal"}},
		{map[string]string{EnvDirMode: "0500"}, []string{"DirMode", "owner"}},
		{map[string]string{EnvFileMode: "7777"}, []string{EnvFileMode, "beyond"}},
		{map[string]string{EnvWaitSecs: "soon"}, []string{EnvWaitSecs}},
		{map[string]string{EnvSharedURL: "bucket"}, []string{"SharedURL", `"bucket"`}},
		{map[string]string{EnvSigningKey: "a", EnvSigningKeyFile: "/x"}, []string{"both set"}},
		{map[string]string{EnvSigningKeyFile: "/nonexistent/key"}, []string{EnvSigningKeyFile, "/nonexistent/key"}},
		{map[string]string{EnvSigningKey: " \n"}, []string{EnvSigningKey, "empty"}},
		{map[string]string{EnvSigningKey: "\t"}, []string{EnvSigningKey, "empty"}},
		{map[string]string{EnvSigningKeyFile: os.DevNull}, []string{EnvSigningKeyFile, "empty"}},
		{map[string]string{EnvRole: "boss", EnvMaxSize: "lots"}, []string{EnvRole, EnvMaxSize}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.want, "_"), func(t *testing.T) {
			o, err := FromEnv(envOf(tc.env))
			if err == nil {
				t.Fatalf("no error for %v (got %+v)", tc.env, o)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"123", 123, true}, {"1KB", 1000, true}, {"1kib", 1024, true},
		{"10GiB", 10 << 30, true}, {"500MB", 500e6, true}, {"1.5GiB", 3 << 29, true},
		{" 2 MiB ", 2 << 20, true}, {"1TiB", 1 << 40, true}, {"7B", 7, true},
		{"", 0, false}, {"-1", 0, false}, {"1.2.3", 0, false}, {"1PB", 0, false},
		{"9223372036854775807", 1<<63 - 1, true}, {"9223372036854775808", 0, false},
		{"8589934592GiB", 0, false}, {"1e3", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), strings.TrimSpace(tc.in)) {
			t.Errorf("ParseSize(%q) error %q does not name the value", tc.in, err)
		}
	}
}

func TestParseSubcaches(t *testing.T) {
	tests := []struct {
		in   string
		want []Subcache
		ok   bool
	}{
		{"all", []Subcache{SubcacheAutotune, SubcacheKernels}, true},
		{"ALL", []Subcache{SubcacheAutotune, SubcacheKernels}, true},
		{"none", []Subcache{}, true},
		{"autotune", []Subcache{SubcacheAutotune}, true},
		{"xla_gpu_kernel_cache_file", []Subcache{SubcacheKernels}, true},
		{"autotune,autotune", []Subcache{SubcacheAutotune}, true},
		{"kernel", nil, false}, {"", nil, false}, {"auto", nil, false}, {"none,autotune", nil, false},
	}
	for _, tc := range tests {
		got, err := ParseSubcaches(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseSubcaches(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if SubcacheAutotune.Alias() != "autotune" || SubcacheKernels.Alias() != "kernels" {
		t.Error("aliases")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		mut  func(*Options)
		want string
	}{
		{func(o *Options) { o.Subcaches = []Subcache{"bogus"} }, `"bogus"`},
		{func(o *Options) { o.MinCompileTime = -1 }, "MinCompileTime"},
		{func(o *Options) { o.MinEntrySize = -1 }, "MinEntrySize"},
		{func(o *Options) { o.ProcessIndex = -2 }, "ProcessIndex -2"},
		{func(o *Options) { o.Role = 9 }, "Role 9"},
		{func(o *Options) { o.DirMode = 0o1777 }, "DirMode"},
		{func(o *Options) { o.FileMode = 0o400 }, "FileMode"},
		{func(o *Options) { o.WaitTimeout = -time.Second }, "WaitTimeout"},
		{func(o *Options) { o.Dir = "a\x00b" }, "NUL"},
	}
	for _, tc := range tests {
		o := Defaults()
		tc.mut(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want mention of %q", err, tc.want)
		}
	}
	// The zero Options (built by hand) is valid: zero modes mean defaults.
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
}

func TestSettings(t *testing.T) {
	o, err := FromEnv(envOf(map[string]string{EnvDir: "/c", EnvSigningKey: "topsecret", "RANK": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	o.MinCompileTime = 0 // set from code
	got := map[string]Setting{}
	for _, s := range o.Settings() {
		got[s.Name] = s
		if s.Help == "" {
			t.Errorf("%s has no help", s.Name)
		}
	}
	if s := got[EnvDir]; s.Value != "/c" || s.Source != SourceEnv {
		t.Errorf("dir setting %+v", s)
	}
	if s := got[EnvMinCompileTime]; s.Value != "0" || s.Source != SourceCode {
		t.Errorf("min compile time setting %+v", s)
	}
	if s := got[EnvSigningKey]; strings.Contains(s.Value, "topsecret") || s.Source != SourceEnv {
		t.Errorf("signing key setting leaks or wrong source: %+v", s)
	}
	if s := got[EnvProcessIndex]; s.Value != "1" || s.Source != "env:RANK" {
		t.Errorf("index setting %+v", s)
	}
	if s := got[EnvRole]; !strings.Contains(s.Value, "reads only") {
		t.Errorf("role setting %+v", s)
	}
	if len(got) != len(allEnvVars)-2 { // the key files share the keys' rows
		t.Errorf("%d settings for %d variables", len(got), len(allEnvVars))
	}
}

// FuzzFromEnv feeds arbitrary values to every variable: FromEnv must return
// valid options or an error, never panic.
func FuzzFromEnv(f *testing.F) {
	f.Add("all", "1.5", "10GiB", "0", "auto", "0700")
	f.Add("autotune,kernels", "-1", "-1", "x", "reader", "777")
	f.Add("kernels", "1e308", "1.5.5MB", "99999999999", "w", "0o640")
	f.Fuzz(func(t *testing.T, subs, secs, size, index, role, mode string) {
		env := map[string]string{EnvDir: "/d", EnvEnableXLA: subs, EnvMinCompileTime: secs,
			EnvMaxSize: size, EnvMinEntrySize: size, EnvProcessIndex: index, EnvRole: role, EnvDirMode: mode, EnvWaitSecs: secs}
		o, err := FromEnv(envOf(env))
		if err != nil {
			if o.Dir != "" {
				t.Fatal("options returned alongside an error")
			}
			return
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("FromEnv returned invalid options: %v", err)
		}
		_ = o.Settings()
	})
}

// FuzzParseSize checks that ParseSize never panics and never returns a
// negative size without an error.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "10GiB", "1.5kb", "-3", "9223372036854775807", "1e9", " 4 TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

func TestLeaseVars(t *testing.T) {
	o, err := FromEnv(envOf(map[string]string{EnvLeaseStale: "1.5", EnvLeasePIDCheck: "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if o.LeaseStale != 1500*time.Millisecond || !o.LeaseNoPIDCheck || o.EffectiveLeaseStale() != 1500*time.Millisecond {
		t.Fatalf("LeaseStale %v, LeaseNoPIDCheck %v", o.LeaseStale, o.LeaseNoPIDCheck)
	}
	if o.Sources[EnvLeaseStale] != SourceEnv || o.Sources[EnvLeasePIDCheck] != SourceEnv {
		t.Fatalf("sources %v", o.Sources)
	}
	d := Defaults()
	if d.LeaseStale != 0 || d.LeaseNoPIDCheck || d.EffectiveLeaseStale() != DefaultLeaseStale {
		t.Fatalf("defaults: %v %v", d.LeaseStale, d.LeaseNoPIDCheck)
	}
	if o, err := FromEnv(envOf(map[string]string{EnvLeasePIDCheck: "yes"})); err != nil || o.LeaseNoPIDCheck {
		t.Fatalf("%s=yes: %v, %v", EnvLeasePIDCheck, o.LeaseNoPIDCheck, err)
	}
	for _, tt := range []struct{ name, value string }{
		{EnvLeaseStale, "-3"},
		{EnvLeaseStale, "0"},
		{EnvLeaseStale, "abc"},
		{EnvLeaseStale, "100000"},
		{EnvLeasePIDCheck, "maybe"},
	} {
		_, err := FromEnv(envOf(map[string]string{tt.name: tt.value}))
		if err == nil || !strings.Contains(err.Error(), tt.name+"=") {
			t.Errorf("%s=%q: %v, want an error naming the variable", tt.name, tt.value, err)
		}
	}
	bad := Defaults()
	bad.LeaseStale = -time.Second
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "LeaseStale") {
		t.Errorf("Validate of a negative LeaseStale: %v", err)
	}
}
