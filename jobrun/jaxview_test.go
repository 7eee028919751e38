package jobrun

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
)

// TestJAXView: the link JAX gets has one path for a job whatever the
// directory's; a second job holding the name for another directory is
// never repointed under it (the newcomer gets an error and uses its real
// path); once the holder is gone the link follows the new directory; a
// link directory others could write is refused.
func TestJAXView(t *testing.T) {
	jaxViewRoot = t.TempDir()
	defer func() { jaxViewRoot = "/tmp" }()
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b b")
	url := "s3://bucket/job"

	va, err := openJAXView(a, url)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(jaxViewRoot, "xlacache-"+strconv.Itoa(os.Getuid()), jaxViewName(url, a))
	if va.Path != want {
		t.Fatalf("link %s, want %s", va.Path, want)
	}
	if got, _ := os.Readlink(va.Path); got != a {
		t.Fatalf("link leads to %q, want %q", got, a)
	}
	// The same directory again (another process of the job on this host).
	va2, err := openJAXView(a, url)
	if err != nil || va2.Path != va.Path {
		t.Fatalf("second process of the job: %v %v", va2, err)
	}
	// Another directory while the name is held: refused, link unchanged.
	if vb, err := openJAXView(b, url); err == nil {
		t.Fatalf("repointed a held link: %+v", vb)
	}
	if got, _ := os.Readlink(va.Path); got != a {
		t.Fatalf("held link now leads to %q", got)
	}
	// Another bucket: another name, no conflict.
	vo, err := openJAXView(b, url+"-other")
	if err != nil || vo.Path == va.Path {
		t.Fatalf("other job: %v %v", vo, err)
	}
	vo.Close()
	// No bucket: a name per directory, so two directories never contend.
	n1, err := openJAXView(a, "")
	if err != nil {
		t.Fatal(err)
	}
	n2, err := openJAXView(b, "")
	if err != nil || n1.Path == n2.Path {
		t.Fatalf("no bucket: %v and %v (%v)", n1, n2, err)
	}
	n1.Close()
	n2.Close()
	va.Close()
	va2.Close()
	// Released: the next job's directory takes the name.
	vb, err := openJAXView(b, url)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(vb.Path); got != b || vb.Path != want {
		t.Fatalf("after release: %s -> %q", vb.Path, got)
	}
	vb.Close()

	if err := os.Chmod(filepath.Dir(want), 0o777); err != nil {
		t.Fatal(err)
	}
	if v, err := openJAXView(a, url); err == nil || !strings.Contains(err.Error(), "written by others") {
		t.Fatalf("link directory mode 0777: %v %v", v, err)
	}
}

// TestLaunchForJAXDir: JAX's directory and exec's autotune flag name the
// link; XLACACHE_DIR stays the real directory.
func TestLaunchForJAXDir(t *testing.T) {
	sc, _ := config.ParseSubcaches("all")
	opts := config.Options{Dir: "/real/dir", Subcaches: sc, SubcachesExplicit: true}
	l, err := launchFor(opts, "/tmp/xlacache-0/jax-x", xla.TargetAll, xla.SupportForVersion(xla.DefaultVersion, xla.SourceDefault), "", false)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, v := range l.Vars {
		env[v.Name] = v.Value
	}
	if env[xla.EnvJAXCacheDir] != "/tmp/xlacache-0/jax-x" || env[config.EnvDir] != "/real/dir" {
		t.Errorf("JAX dir %q, XLACACHE_DIR %q", env[xla.EnvJAXCacheDir], env[config.EnvDir])
	}
	if !strings.Contains(env[xla.EnvXLAFlags], "=/tmp/xlacache-0/jax-x/"+xla.FlagAutotuneCacheDir) || strings.Contains(env[xla.EnvXLAFlags], "/real/dir") {
		t.Errorf("XLA_FLAGS %q", env[xla.EnvXLAFlags])
	}
}
