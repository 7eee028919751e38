package jobrun

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestExecDirectoryTrust: exec trusts a directory on `run`'s terms. One
// that others can write is refused without a key (one line, the command
// runs plain: no XLACACHE_DIR, no fill, no publish); with a key it is
// used but never published from, so a file another user planted there is
// not sealed with the job's key and shipped to every host. A shared tier
// without a key is warned about once.
func TestExecDirectoryTrust(t *testing.T) {
	planted := "jit_f-" + strings.Repeat("ab", 32) + "-cache"
	entry, err := jaxcache.Encode(jaxcache.CodecZlib, 3e9, []byte("planted executable"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		mode      os.FileMode
		key       []byte
		plain     bool // the command runs without the cache
		published bool // the planted file reaches the store
		unsigned  int  // unsigned-tier warnings
	}{
		{name: "own dir, no key", mode: 0o700, plain: false, published: true, unsigned: 1},
		{name: "own dir, key", mode: 0o700, key: []byte("k"), published: true},
		{name: "others can write, no key", mode: 0o777, plain: true},
		{name: "others can write, key", mode: 0o777, key: []byte("k")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob(t, "printdir")
			dir := filepath.Join(j.Opts.Dir, "cache")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, planted), entry, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			j.Opts.Dir, j.Opts.SigningKey = dir, sign.NewHMAC(tc.key)
			if tc.key != nil {
				j.Opts.AllowSharedDir = true
			}
			store := memblob.New(memblob.Options{})
			j.Store = store
			var out, logs bytes.Buffer
			j.Stdout = &out
			j.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			rep, err := j.Run(context.Background())
			if err != nil || rep.ExitCode != 0 {
				t.Fatalf("exit %d, %v", rep.ExitCode, err)
			}
			gotPlain := strings.Contains(out.String(), "set=false")
			if gotPlain != tc.plain {
				t.Errorf("command ran plain: %v, want %v (%s)", gotPlain, tc.plain, out.String())
			}
			if tc.plain {
				if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "refusing") {
					t.Errorf("want one line refusing the directory, got:\n%s", logs.String())
				}
			}
			objs, err := store.List(context.Background(), hostfill.Prefix)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(objs) > 0; got != tc.published {
				t.Errorf("published %d objects (publisher %v), want published=%v", len(objs), rep.Publisher, tc.published)
			}
			if got := strings.Count(logs.String(), cache.UnsignedSharedTierWarning); got != tc.unsigned {
				t.Errorf("%d unsigned-tier warnings, want %d:\n%s", got, tc.unsigned, logs.String())
			}
		})
	}
}
