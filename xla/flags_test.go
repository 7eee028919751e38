package xla

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		in      string
		want    []Flag
		ignored string
	}{
		{"", nil, ""},
		{"  --a=1 --b", []Flag{{"a", "1", true}, {"b", "", false}}, ""},
		{"--a=\"x y\" --b='p q'", []Flag{{"a", "x y", true}, {"b", "p q", true}}, ""},
		{`--a="q\"uote\\d"`, []Flag{{"a", `q"uote\d`, true}}, ""},
		{`--a='back\slash'`, []Flag{{"a", `back\slash`, true}}, ""},
		{"--a=1\t\n--b=x=y", []Flag{{"a", "1", true}, {"b", "x=y", true}}, ""},
		{"--a=1 garbage --b=2", []Flag{{"a", "1", true}}, "garbage --b=2"},
		{"--a.b=1", []Flag{{"a.b", "1", true}}, ""},
		{"--a=\"unterminated", []Flag{{"a", "unterminated", true}}, ""},
		{"--a=", []Flag{{"a", "", true}}, ""},
	}
	for _, tc := range tests {
		p, err := ParseFlags(tc.in)
		if err != nil {
			t.Fatalf("ParseFlags(%q): %v", tc.in, err)
		}
		if !reflect.DeepEqual(p.Flags, tc.want) || p.Ignored != tc.ignored {
			t.Errorf("ParseFlags(%q) = %+v ignored %q, want %+v ignored %q", tc.in, p.Flags, p.Ignored, tc.want, tc.ignored)
		}
	}
	if _, err := ParseFlags("/etc/xla_flags.txt"); !errors.Is(err, ErrFlagsFile) {
		t.Errorf("file name: err = %v, want ErrFlagsFile", err)
	}
}

func TestQuoteFlagValueRoundTrip(t *testing.T) {
	for _, v := range []string{"plain", "/a dir/with spaces", `say "hi"`, `back\slash`, "'lead", "\"lead", "tab\there", "new\nline", ""} {
		f := Flag{Name: "xla_x", Value: v, HasValue: true}
		p, err := ParseFlags(f.String() + " --next=1")
		if err != nil {
			t.Fatalf("%q: %v", f.String(), err)
		}
		if len(p.Flags) != 2 || p.Flags[0] != f || p.Flags[1].Name != "next" {
			t.Errorf("value %q rendered %q parsed back as %+v", v, f.String(), p.Flags)
		}
	}
}

func TestMergeFlags(t *testing.T) {
	dir := Flag{FlagAutotuneCacheDir, "/c d/x", true}
	mode := Flag{FlagAutotuneCacheMode, ModeUpdate, true}
	want := []Flag{dir, mode}
	tests := []struct {
		name      string
		existing  string
		value     string
		added     int
		conflicts int
	}{
		{"empty", "", `--xla_gpu_per_fusion_autotune_cache_dir="/c d/x" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE`, 2, 0},
		{"blank", "   ", `--xla_gpu_per_fusion_autotune_cache_dir="/c d/x" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE`, 2, 0},
		{"unrelated kept verbatim", "--xla_gpu_autotune_level=2  --xla_foo", `--xla_gpu_per_fusion_autotune_cache_dir="/c d/x" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE --xla_gpu_autotune_level=2  --xla_foo`, 2, 0},
		{"same value not duplicated", `--xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE`, `--xla_gpu_per_fusion_autotune_cache_dir="/c d/x" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE`, 1, 0},
		{"user value wins", `--xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ`, `--xla_gpu_per_fusion_autotune_cache_dir="/c d/x" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ`, 1, 1},
		{"user path wins", `--xla_gpu_per_fusion_autotune_cache_dir='/mine'`, `--xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE --xla_gpu_per_fusion_autotune_cache_dir='/mine'`, 1, 1},
		{"ours before an ignored tail", `--a=1 oops`, `--xla_gpu_per_fusion_autotune_cache_dir="/c d/x" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE --a=1 oops`, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := MergeFlags(tc.existing, want)
			if err != nil {
				t.Fatal(err)
			}
			if r.Value != tc.value || len(r.Added) != tc.added || len(r.Conflicts) != tc.conflicts {
				t.Fatalf("got %q added %d conflicts %d, want %q added %d conflicts %d", r.Value, len(r.Added), len(r.Conflicts), tc.value, tc.added, tc.conflicts)
			}
			// What XLA sees: every wanted flag, with the user's value on conflict.
			p, err := ParseFlags(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				got, ok := p.Lookup(w.Name)
				if !ok {
					t.Errorf("XLA would not see --%s in %q", w.Name, r.Value)
					continue
				}
				user, userSet := ParsedFlags{}, false
				if tc.existing != "" && strings.TrimSpace(tc.existing) != "" {
					user, _ = ParseFlags(tc.existing)
					_, userSet = user.Lookup(w.Name)
				}
				if u, _ := user.Lookup(w.Name); userSet && got != u {
					t.Errorf("--%s: XLA would apply %q, want the user's %q", w.Name, got.Value, u.Value)
				}
				if !userSet && got != w {
					t.Errorf("--%s: XLA would apply %q, want %q", w.Name, got.Value, w.Value)
				}
			}
		})
	}
	if _, err := MergeFlags("flags.txt", want); !errors.Is(err, ErrFlagsFile) {
		t.Errorf("file: err = %v", err)
	}
}

func opts(dir string, index int, role config.Role, subs ...config.Subcache) config.Options {
	o := config.Defaults()
	o.Dir, o.ProcessIndex, o.Role, o.Subcaches = dir, index, role, subs
	return o
}

func names(fs []Flag) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Name+"="+f.Value)
	}
	return strings.Join(s, " ")
}

func TestCacheFlags(t *testing.T) {
	A, K := config.SubcacheAutotune, config.SubcacheKernels
	cur := SupportForVersion(Version{0, 5, 0}, SourceVersion)
	old := SupportForVersion(Version{0, 4, 35}, SourceVersion)
	noMode := Support{Source: SourcePlugin, Detail: "fake", known: map[string]bool{FlagAutotuneCacheDir: true, FlagKernelCacheFile: true, FlagLLVMModuleParallelism: true}}
	const d = "/cache dir"
	tests := []struct {
		name  string
		o     config.Options
		sup   Support
		flags string
		skips int
	}{
		{"off", opts("", 0, config.RoleAuto, A), cur, "", 0},
		{"writer autotune", opts(d, 0, config.RoleAuto, A), cur, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE", 0},
		{"reader autotune", opts(d, 3, config.RoleAuto, A), cur, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ", 0},
		{"forced reader at index 0", opts(d, 0, config.RoleReader, A), cur, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ", 0},
		{"forced writer at index 2", opts(d, 2, config.RoleWriter, A), cur, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE", 0},
		{"writer all", opts(d, 0, config.RoleAuto, A, K), cur, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE xla_gpu_kernel_cache_file=/cache dir/xla_gpu_kernel_cache_file xla_gpu_enable_llvm_module_compilation_parallelism=true", 0},
		// No kernel cache, but the same compile option as the writer, or
		// the keys of writer and reader would differ.
		{"reader all: no kernel cache", opts(d, 1, config.RoleAuto, A, K), cur, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ xla_gpu_enable_llvm_module_compilation_parallelism=true", 1},
		{"reader kernels only", opts(d, 1, config.RoleAuto, K), cur, "xla_gpu_enable_llvm_module_compilation_parallelism=true", 1},
		{"kernels only writer", opts(d, 0, config.RoleAuto, K), cur, "xla_gpu_kernel_cache_file=/cache dir/xla_gpu_kernel_cache_file xla_gpu_enable_llvm_module_compilation_parallelism=true", 0},
		{"none", opts(d, 0, config.RoleAuto), cur, "", 0},
		{"old XLA gets nothing", opts(d, 0, config.RoleAuto, A, K), old, "", 2},
		{"no mode flag: writer gets the dir", opts(d, 0, config.RoleAuto, A), noMode, "xla_gpu_per_fusion_autotune_cache_dir=/cache dir/xla_gpu_per_fusion_autotune_cache_dir", 0},
		{"no mode flag: reader gets nothing", opts(d, 1, config.RoleAuto, A), noMode, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, skips := CacheFlags(tc.o, tc.sup)
			if names(fs) != tc.flags || len(skips) != tc.skips {
				t.Errorf("got %q skips %v, want %q and %d skips", names(fs), skips, tc.flags, tc.skips)
			}
		})
	}
}

func TestNormalizeFlagsForKey(t *testing.T) {
	w, err := NormalizeFlagsForKey(`--xla_gpu_autotune_level=3 --xla_gpu_per_fusion_autotune_cache_dir=/a --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE --xla_dump_to=/tmp/d`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NormalizeFlagsForKey(`--xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ   --xla_gpu_autotune_level=3 --xla_gpu_per_fusion_autotune_cache_dir="/b c"`)
	if err != nil {
		t.Fatal(err)
	}
	if w != r || w != "--xla_gpu_autotune_level=3" {
		t.Errorf("writer %q, reader %q: want both --xla_gpu_autotune_level=3", w, r)
	}
	o, _ := NormalizeFlagsForKey(`--xla_gpu_autotune_level=4`)
	if o == w {
		t.Error("a changed non-cache flag must change the key text")
	}
}

func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"--a=1 --b", `--a="x \" y" --c='z'`, "--a=1 tail", "file", "", "--=", "-", "--a=\"", "--a='"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseFlags(s)
		if err != nil {
			return
		}
		// Rendering what was parsed and parsing it again gives the same
		// flags: MergeFlags relies on this to re-emit flags faithfully.
		var parts []string
		for _, fl := range p.Flags {
			if fl.Name == "" || strings.IndexFunc(fl.Name, func(r rune) bool { return r > 127 || !isFlagNameByte(byte(r)) }) >= 0 {
				return // not a name XLA could match; rendering is not defined
			}
			parts = append(parts, fl.String())
		}
		again, err := ParseFlags(strings.Join(parts, " "))
		if err != nil {
			if len(parts) == 0 {
				return
			}
			t.Fatalf("re-parse of %q: %v", strings.Join(parts, " "), err)
		}
		if len(again.Flags) != len(p.Flags) {
			t.Fatalf("re-parse of %q: %d flags, want %d", strings.Join(parts, " "), len(again.Flags), len(p.Flags))
		}
		for i := range p.Flags {
			if again.Flags[i] != p.Flags[i] {
				t.Fatalf("flag %d: %+v re-parsed as %+v", i, p.Flags[i], again.Flags[i])
			}
		}
	})
}
