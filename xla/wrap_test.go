package xla

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// Without a loadable plugin file Prepare sets up no wrapper and changes
// nothing beyond XLA's flags; XLACACHE_PJRT_WRAP=0 turns it off.
func TestPrepareWrapperSkipped(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "pjrt_c_api_cpu_plugin.so")
	if err := os.WriteFile(notELF, []byte("not a shared object"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  fakeEnv
		po   PrepareOptions
	}{
		{"no plugin", fakeEnv{EnvPluginPath: t.TempDir()}, PrepareOptions{PluginName: "cpu"}},
		{"not a plugin", fakeEnv{}, PrepareOptions{Plugin: notELF}},
		{"turned off", fakeEnv{EnvWrap: "0"}, PrepareOptions{Plugin: notELF}},
		{"NoWrapper", fakeEnv{}, PrepareOptions{Plugin: notELF, NoWrapper: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := config.Defaults()
			o.Dir = t.TempDir()
			tc.po.LookupEnv, tc.po.Setenv, tc.po.WrapperDir = tc.env.lookup, tc.env.set, t.TempDir()
			p, err := Prepare(context.Background(), o, tc.po)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Wrapper != nil || p.WrapperSkipped == "" {
				t.Errorf("wrapper %v, skipped %q", p.Wrapper, p.WrapperSkipped)
			}
			for _, k := range []string{"XLACACHE_PJRT_INNER", "XLACACHE_PJRT_SOCKET"} {
				if _, ok := tc.env[k]; ok {
					t.Errorf("%s set", k)
				}
			}
		})
	}
}
