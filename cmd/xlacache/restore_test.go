package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// Issue 20, item 5: `verify --repair` with a mistyped key changes nothing
// and says the key is wrong; `verify --restore` brings back what an
// earlier repair quarantined.
func TestCLIVerifyWrongKeyAndRestore(t *testing.T) {
	dir := t.TempDir()
	o := config.Defaults()
	o.Dir, o.MinCompileTime, o.SigningKey = dir, 0, sign.NewHMAC([]byte("right key"))
	c, err := cache.Open(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for i := range 3 {
		k := cache.NewKey("jit_f", []cache.KeyPart{{Name: "program", Data: []byte{byte(i)}}})
		tier := c.Tier(cache.ExecutablesTier)
		if err := tier.Put(context.Background(), k, bytes.Repeat([]byte("payload"), 100), 1e9); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(layout.EntryRel(cache.ExecutablesTier, k.String())))
		if files[p], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	run := func(key string, args ...string) (string, string, int) {
		t.Helper()
		for _, k := range []string{config.EnvMaxSize, config.EnvSigningKeyFile, config.EnvRole, config.EnvProcessIndex, "RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK"} {
			t.Setenv(k, "")
		}
		t.Setenv(config.EnvDir, dir)
		t.Setenv(config.EnvSigningKey, key)
		out, stderr, err := execCLI(t, args...)
		errb := bytes.NewBufferString(stderr)
		code := cli.ExitCode("xlacache", err, errb)
		return out, errb.String(), code
	}

	out, stderr, code := run("rihgt key", "verify", "--repair")
	if code != cli.ExitFailure || !strings.Contains(stderr, "signing key is wrong") || !strings.Contains(stderr, config.EnvSigningKey) {
		t.Fatalf("verify --repair with a mistyped key: exit %d\n%s%s", code, out, stderr)
	}
	for p, want := range files {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("verify --repair with a mistyped key moved %s", p)
		}
	}

	// What an earlier build's repair did: every entry in the quarantine.
	qdir := filepath.Join(dir, cache.QuarantineDir)
	if err := os.MkdirAll(qdir, 0o700); err != nil {
		t.Fatal(err)
	}
	for p := range files {
		if err := os.Rename(p, filepath.Join(qdir, layout.QuarantineName(cache.ExecutablesTier, filepath.Base(p), "q1"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := run("rihgt key", "verify", "--restore"); code != cli.ExitOK {
		t.Fatalf("restore with the wrong key: exit %d %s", code, stderr)
	}
	for p := range files {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("restore with the wrong key brought back %s", p)
		}
	}
	out, stderr, code = run("right key", "verify", "--restore")
	if code != cli.ExitOK || !strings.Contains(out, "3 restored") {
		t.Fatalf("verify --restore: exit %d\n%s%s", code, out, stderr)
	}
	for p, want := range files {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s not restored (err %v)", p, err)
		}
	}
	if out, stderr, code := run("right key", "verify"); code != cli.ExitOK {
		t.Errorf("verify after restore: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code := run("right key", "verify", "--restore", "--repair"); code != cli.ExitUsage {
		t.Errorf("--restore --repair: exit %d, want %d (%s)", code, cli.ExitUsage, stderr)
	}
}
