package sysmem

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// machine lays out files under a temporary root: path (absolute, as on a
// real system) to content.
func machine(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const (
	gib = int64(1) << 30
	mib = int64(1) << 20
)

func noRlimits() []Rlimit { return nil }

const meminfo = `MemTotal:       24683664 kB
MemFree:        23324196 kB
MemAvailable:   16777216 kB
Buffers:          100000 kB
`

func TestMeminfo(t *testing.T) {
	root := machine(t, map[string]string{"/proc/meminfo": meminfo})
	l, ok := Reader{Root: root, Rlimits: noRlimits}.Available()
	if !ok || l.Bytes != 16*gib || !strings.Contains(l.Source, "MemAvailable") {
		t.Fatalf("got %v %v, want 16 GiB from MemAvailable", l, ok)
	}
	// Kernels before 3.14 have no MemAvailable.
	root = machine(t, map[string]string{"/proc/meminfo": "MemTotal: 100 kB\nMemFree: 2048 kB\n"})
	l, ok = Reader{Root: root, Rlimits: noRlimits}.Available()
	if !ok || l.Bytes != 2*mib || !strings.Contains(l.Source, "MemFree") {
		t.Fatalf("got %v %v, want 2 MiB from MemFree", l, ok)
	}
}

func TestNothingReadable(t *testing.T) {
	if l, ok := (Reader{Root: t.TempDir(), Rlimits: noRlimits}).Available(); ok {
		t.Fatalf("empty root gave a limit: %v", l)
	}
	root := machine(t, map[string]string{"/proc/meminfo": "MemAvailable: lots kB\n"})
	if l, ok := (Reader{Root: root, Rlimits: noRlimits}).Available(); ok {
		t.Fatalf("garbled meminfo gave a limit: %v", l)
	}
}

func TestCgroupV2(t *testing.T) {
	root := machine(t, map[string]string{
		"/proc/meminfo":     meminfo,
		"/proc/self/cgroup": "0::/user.slice/job.scope\n",
		"/proc/self/mountinfo": "25 30 0:22 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n" +
			"26 30 0:5 / /proc rw - proc proc rw\n",
		"/sys/fs/cgroup/user.slice/job.scope/memory.max":     "max\n",
		"/sys/fs/cgroup/user.slice/job.scope/memory.current": "100\n",
		// The parent's limit binds the job: 3 GiB, 1 GiB used of which
		// 256 MiB is reclaimable cache.
		"/sys/fs/cgroup/user.slice/memory.max":     "3221225472\n",
		"/sys/fs/cgroup/user.slice/memory.current": "1073741824\n",
		"/sys/fs/cgroup/user.slice/memory.stat":    "anon 100\nfile 300\ninactive_file 268435456\nactive_file 5\n",
	})
	l, ok := Reader{Root: root, Rlimits: noRlimits}.Available()
	want := 3*gib - (gib - 256*mib)
	if !ok || l.Bytes != want {
		t.Fatalf("got %v %v, want %d", l, ok, want)
	}
	if !strings.Contains(l.Source, "cgroup v2 memory.max of /sys/fs/cgroup/user.slice") {
		t.Errorf("source %q does not name the cgroup", l.Source)
	}
}

// TestCgroupInContainer: inside a container the container's own cgroup is
// mounted where the cgroup filesystem belongs, while /proc/self/cgroup
// names it as "/" (v2 namespaced) or by its full path (older Docker's v1
// bind mount of /docker/<id>).
func TestCgroupInContainer(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2 namespaced", map[string]string{
			"/proc/self/cgroup":             "0::/\n",
			"/proc/self/mountinfo":          "25 30 0:22 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
			"/sys/fs/cgroup/memory.max":     "536870912\n",
			"/sys/fs/cgroup/memory.current": "134217728\n",
		}, 384 * mib},
		{"v1 bind-mounted", map[string]string{
			"/proc/self/cgroup":                           "4:memory:/docker/abc\n",
			"/proc/self/mountinfo":                        "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "1073741824\n",
			"/sys/fs/cgroup/memory/memory.usage_in_bytes": "0\n",
		}, gib},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := Reader{Root: machine(t, tt.files), Rlimits: noRlimits}.Available()
			if !ok || l.Bytes != tt.want {
				t.Fatalf("got %v %v, want %d", l, ok, tt.want)
			}
		})
	}
}

func TestCgroupV1(t *testing.T) {
	const cg = "/process_api/bd6a"
	root := machine(t, map[string]string{
		"/proc/meminfo":     meminfo,
		"/proc/self/cgroup": "9:name=systemd:/\n5:devices:/\n4:memory:" + cg + "\n0::/\n",
		"/proc/self/mountinfo": "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n" +
			"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
			"36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n" +
			"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
		// No v2 memory controller: the unified mount has no memory.max.
		"/sys/fs/cgroup/unified/cgroup.procs":                           "1\n",
		"/sys/fs/cgroup/memory/memory.limit_in_bytes":                   "9223372036854771712\n",
		"/sys/fs/cgroup/memory" + cg + "/memory.limit_in_bytes":         "2147483648\n",
		"/sys/fs/cgroup/memory" + cg + "/memory.usage_in_bytes":         "1610612736\n",
		"/sys/fs/cgroup/memory" + cg + "/memory.stat":                   "cache 5\ninactive_file 1\ntotal_inactive_file 536870912\n",
		"/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":       "9223372036854771712\n",
		"/sys/fs/cgroup/memory/process_api/memory.usage_in_bytes":       "1610612736\n",
		"/sys/fs/cgroup/devices" + cg + "/memory.limit_in_bytes":        "1\n", // not the memory controller
		"/sys/fs/cgroup/memory" + cg + "/../unrelated/memory.max_usage": "1\n",
	})
	l, ok := Reader{Root: root, Rlimits: noRlimits}.Available()
	want := 2*gib - (1536*mib - 512*mib)
	if !ok || l.Bytes != want || !strings.Contains(l.Source, "cgroup v1 memory.limit_in_bytes of /sys/fs/cgroup/memory"+cg) {
		t.Fatalf("got %v %v, want %d from the v1 memory cgroup", l, ok, want)
	}
	// Unlimited everywhere: meminfo decides.
	root = machine(t, map[string]string{
		"/proc/meminfo":                               meminfo,
		"/proc/self/cgroup":                           "4:memory:/\n",
		"/proc/self/mountinfo":                        "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
	})
	l, ok = Reader{Root: root, Rlimits: noRlimits}.Available()
	if !ok || l.Bytes != 16*gib {
		t.Fatalf("got %v %v, want MemAvailable", l, ok)
	}
}

func TestRlimits(t *testing.T) {
	root := machine(t, map[string]string{
		"/proc/meminfo":     meminfo,
		"/proc/self/status": "Name:\txlacache\nVmSize:\t  1048576 kB\nVmData:\t    4096 kB\n",
	})
	rl := func(as, data uint64) func() []Rlimit {
		return func() []Rlimit { return []Rlimit{{Name: "RLIMIT_AS", Cur: as}, {Name: "RLIMIT_DATA", Cur: data}} }
	}
	l, ok := Reader{Root: root, Rlimits: rl(uint64(3*gib), Unlimited)}.Available()
	if !ok || l.Bytes != 2*gib || l.Source != "RLIMIT_AS" {
		t.Fatalf("got %v %v, want 2 GiB under RLIMIT_AS (3 GiB minus 1 GiB mapped)", l, ok)
	}
	l, ok = Reader{Root: root, Rlimits: rl(Unlimited, uint64(8*mib))}.Available()
	if !ok || l.Bytes != 4*mib || l.Source != "RLIMIT_DATA" {
		t.Fatalf("got %v %v, want 4 MiB under RLIMIT_DATA", l, ok)
	}
	// A limit already exceeded leaves nothing, not a negative number.
	l, _ = Reader{Root: root, Rlimits: rl(uint64(mib), Unlimited)}.Available()
	if l.Bytes != 0 {
		t.Fatalf("got %v, want 0", l)
	}
}

func TestSystem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	l, ok := Available()
	if !ok || l.Bytes <= 0 {
		t.Fatalf("no limit on this Linux system: %v %v", l, ok)
	}
	t.Logf("available: %v", l)
	for _, l := range (Reader{}).Limits() {
		t.Logf("  %v", l)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/mnt/with\040space\`); got != `/mnt/with space\` {
		t.Fatalf("got %q", got)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 16 * gib: "16.0 GiB", 1536 * mib: "1.5 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
