//go:build linux

package xlacache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// Item 11 of the hardening issue: "one log line per failure". Each fault
// below is set up for real (a full tmpfs, a read-only remount, permission
// bits for an unprivileged child process, a shared store nobody listens
// on) and a whole run of a process — Open, several compiles that miss,
// store and hit, Close — must log exactly one WARN line about it, and
// still compile every program.

// faultBackend compiles a program into its text padded to size
// incompressible bytes, and looks up and stores a kernel in its autotune
// subcache on every compile, as real backends do: more writes, more
// chances to log a failure twice.
type faultBackend struct {
	size     int
	compiles int
}

type faultExe []byte

func (e faultExe) Serialize() ([]byte, error) { return e, nil }

func (b *faultBackend) Name() string { return "fault" }

func (b *faultBackend) KeyParts(ctx context.Context, p cache.Program) ([]cache.KeyPart, error) {
	return []cache.KeyPart{{Name: "program", Data: p.Text}}, nil
}

func (b *faultBackend) Compile(ctx context.Context, p cache.Program, env *cache.Session) (cache.Executable, error) {
	b.compiles++
	t := env.Tier(config.SubcacheAutotune)
	k := cache.NewKey("kernel", []cache.KeyPart{{Name: "kernel", Data: p.Text}})
	if _, ok := t.Get(ctx, k); !ok {
		t.Put(ctx, k, noise(string(p.Text)+"kernel", b.size/2), 0)
	}
	return faultExe(append([]byte("exe "+string(p.Text)+" "), noise(string(p.Text), b.size)...)), nil
}

func (b *faultBackend) Load(ctx context.Context, data []byte, env *cache.Session) (cache.Executable, error) {
	if !bytes.HasPrefix(data, []byte("exe ")) {
		return nil, fmt.Errorf("not an executable")
	}
	return faultExe(data), nil
}

// noise returns n incompressible bytes derived from seed.
func noise(seed string, n int) []byte {
	sum := sha256.Sum256([]byte(seed))
	out := make([]byte, 0, n+32)
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

// faultOptions are a writer's options on dir: everything stored, the
// autotune subcache on, single-flight on (leases are files too).
func faultOptions(dir string) config.Options {
	o := config.Defaults()
	o.Dir = dir
	o.MinCompileTime = 0
	o.Role = config.RoleWriter
	o.Subcaches, o.SubcachesExplicit = []config.Subcache{config.SubcacheAutotune}, true
	o.WaitTimeout = 0
	return o
}

// faultRun is one process's run on o: Open, compile programs (each twice:
// a miss, then a hit or another miss), Close. It returns the WARN and
// ERROR lines logged, and fails t if a compile fails or returns the wrong
// executable.
func faultRun(t testing.TB, o config.Options, programs, size int) []string {
	t.Helper()
	var logs logtest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx := context.Background()
	c, err := Open(ctx, o, logger)
	if err != nil {
		t.Fatal(err)
	}
	b := &faultBackend{size: size}
	for round := 0; round < 2; round++ {
		for i := 0; i < programs; i++ {
			p := cache.Program{Name: "f", Text: []byte("program " + strconv.Itoa(i))}
			exe, _, err := cache.Compile(ctx, c, b, p)
			if err != nil {
				t.Fatalf("compile %d: %v", i, err)
			}
			if want := "exe " + string(p.Text) + " "; !bytes.HasPrefix(exe.(faultExe), []byte(want)) {
				t.Fatalf("compile %d returned the wrong executable", i)
			}
		}
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			lines = append(lines, l)
		}
	}
	return lines
}

// assertOneLine checks that a run logged one WARN line, and that it is
// about the fault (it contains cause).
func assertOneLine(t *testing.T, fault, cause string, lines []string) {
	t.Helper()
	if len(lines) != 1 {
		t.Errorf("%s: %d WARN lines over a run, want 1:\n%s", fault, len(lines), strings.Join(lines, "\n"))
	} else if !strings.Contains(lines[0], cause) {
		t.Errorf("%s: the line is not about %q: %s", fault, cause, lines[0])
	}
}

// mountTmpfs mounts a tmpfs of size at a new directory, or skips the test
// when this process may not mount.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv("XLACACHE_TEST_NO_MOUNT") == "1" {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestOneLinePerFailureDiskFull(t *testing.T) {
	base := mountTmpfs(t, "2m")
	dir := filepath.Join(base, "cache")
	// A first run sets the directory up; then the disk fills up.
	if lines := faultRun(t, faultOptions(dir), 1, 1000); len(lines) != 0 {
		t.Fatalf("healthy run logged:\n%s", strings.Join(lines, "\n"))
	}
	f, err := os.Create(filepath.Join(base, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(f, io.LimitReader(zeroReader{}, 4<<20)) // stops at ENOSPC
	f.Close()
	assertOneLine(t, "full disk", "no space left on device", faultRun(t, faultOptions(dir), 5, 64<<10))
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestOneLinePerFailureReadOnly(t *testing.T) {
	base := mountTmpfs(t, "8m")
	dir := filepath.Join(base, "cache")
	if lines := faultRun(t, faultOptions(dir), 3, 1000); len(lines) != 0 {
		t.Fatalf("healthy run logged:\n%s", strings.Join(lines, "\n"))
	}
	if out, err := exec.Command("mount", "-o", "remount,ro", base).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	assertOneLine(t, "read-only directory", "read-only file system", faultRun(t, faultOptions(dir), 5, 1000))
}

func TestOneLinePerFailureSharedStoreDown(t *testing.T) {
	o := faultOptions(t.TempDir())
	// Nobody listens on port 1; fail fast.
	o.SharedURL = "s3://bkt/prefix?endpoint=http://127.0.0.1:1&timeout=2s"
	// Signed, so that the warning about an unsigned shared tier (a
	// configuration, not a failure) does not show.
	o.SigningKey = sign.NewHMAC([]byte("k"))
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	t.Setenv("AWS_REGION", "us-east-1")
	assertOneLine(t, "shared store down", "shared store failed", faultRun(t, o, 5, 1000))
}

// The permission faults need a process that permission bits apply to:
// root ignores them, so a root test runs its run in a child process as
// nobody.

const faultChildEnv = "XLACACHE_TEST_FAULT_CHILD"

// TestFaultChild is the body of the child process; skipped otherwise.
func TestFaultChild(t *testing.T) {
	dir := os.Getenv(faultChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of the permission fault tests")
	}
	lines := faultRun(t, faultOptions(dir), 5, 1000)
	fmt.Printf("WARNLINES %d\n%s\n", len(lines), strings.Join(lines, "\n"))
}

// runAsNobody runs faultRun on dir in a child process as uid/gid 65534
// (or in this process when it is not root) and returns its WARN lines.
func runAsNobody(t *testing.T, dir string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		return faultRun(t, faultOptions(dir), 5, 1000)
	}
	// The child must be able to execute the test binary.
	bin := filepath.Join(filepath.Dir(filepath.Dir(dir)), "test.bin")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestFaultChild$", "-test.v")
	cmd.Env = append(os.Environ(), faultChildEnv+"="+dir, "HOME="+filepath.Dir(dir))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	i := strings.Index(s, "WARNLINES ")
	if i < 0 {
		t.Fatalf("child output:\n%s", s)
	}
	var n int
	fmt.Sscanf(s[i:], "WARNLINES %d", &n)
	var lines []string
	for _, l := range strings.Split(s[i:], "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			lines = append(lines, l)
		}
	}
	if len(lines) != n {
		t.Fatalf("child reported %d lines, printed %d:\n%s", n, len(lines), s)
	}
	return lines
}

// nobodyTree returns a directory tree owned by the unprivileged user the
// child runs as: <base>/home/cache (cache not created).
func nobodyTree(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "xlacache-fault-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		for _, p := range []string{base, home} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		os.Chmod(base, 0o755)
	}
	return filepath.Join(home, "cache")
}

// prepareAsOwner makes a healthy cache at dir, owned by the child's user.
func prepareAsOwner(t *testing.T, dir string) {
	t.Helper()
	if lines := faultRun(t, faultOptions(dir), 3, 1000); len(lines) != 0 {
		t.Fatalf("healthy run logged:\n%s", strings.Join(lines, "\n"))
	}
	if os.Geteuid() == 0 {
		filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				os.Lchown(p, 65534, 65534)
			}
			return nil
		})
	}
}

func TestOneLinePerFailureUnreadableDir(t *testing.T) {
	dir := nobodyTree(t)
	prepareAsOwner(t, dir)
	if err := os.Chmod(dir, 0o000); err != nil {
		t.Fatal(err)
	}
	assertOneLine(t, "unreadable directory", "permission denied", runAsNobody(t, dir))
}

// The directory opens, but the tiers in it cannot be read (or written).
func TestOneLinePerFailureUnreadableTiers(t *testing.T) {
	dir := nobodyTree(t)
	prepareAsOwner(t, dir)
	for _, sub := range []string{cache.ExecutablesTier, "fault"} {
		if err := os.Chmod(filepath.Join(dir, sub), 0o000); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		os.Chmod(filepath.Join(dir, cache.ExecutablesTier), 0o700)
		os.Chmod(filepath.Join(dir, "fault"), 0o700)
	})
	assertOneLine(t, "unreadable tiers", "permission denied", runAsNobody(t, dir))
}

func TestOneLinePerFailurePermissionDenied(t *testing.T) {
	dir := nobodyTree(t)
	prepareAsOwner(t, dir)
	// The directory is readable, but nothing in it may be written.
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			os.Chmod(p, 0o500)
		}
		return nil
	})
	t.Cleanup(func() {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	assertOneLine(t, "permission denied", "permission denied", runAsNobody(t, dir))
}
