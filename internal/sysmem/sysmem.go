// Package sysmem reports how much more memory this process can allocate
// before the kernel refuses it or kills the process: the smallest of the
// cgroup (v2 memory.max, v1 memory.limit_in_bytes) headroom, the system's
// MemAvailable and the address-space and data-segment rlimits.
//
// Go turns a failed allocation into "fatal error: out of memory", which no
// caller can recover from, so work whose size is known up front (a
// program's tensors) is checked against Available before it starts.
//
// Every figure is read from files under a root directory so that tests can
// describe a machine with fixture files; the zero Reader reads the real
// /proc and /sys.
package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Limit is one bound on the memory the process can still allocate.
type Limit struct {
	// Bytes is how much more the process can allocate under this bound.
	Bytes int64
	// Source names the bound and where it was read, for error messages:
	// "cgroup v2 memory.max of /sys/fs/cgroup/user.slice".
	Source string
}

// String formats the limit as "3.0 GiB (source)".
func (l Limit) String() string { return FormatBytes(l.Bytes) + " (" + l.Source + ")" }

// Rlimit is a soft resource limit and the process's current use of it.
type Rlimit struct {
	// Name is the resource, "RLIMIT_AS" or "RLIMIT_DATA".
	Name string
	// Cur is the soft limit in bytes; Unlimited when there is none.
	Cur uint64
}

// Unlimited is the value of an rlimit without a bound (RLIM_INFINITY).
const Unlimited = math.MaxUint64

// Reader reads memory limits. The zero value reads the running system.
type Reader struct {
	// Root is prepended to every /proc and /sys path ("" is "/"), so that
	// tests can lay out a fake machine in a directory.
	Root string
	// Rlimits returns the soft RLIMIT_AS and RLIMIT_DATA limits; nil asks
	// the kernel (getrlimit(2), where the platform has it).
	Rlimits func() []Rlimit
}

// Available returns the smallest limit of the running system, and false
// when none could be read (then the caller cannot check and should not
// refuse work).
func Available() (Limit, bool) { return Reader{}.Available() }

// Available returns the smallest of r's limits, and false when none could
// be read.
func (r Reader) Available() (Limit, bool) {
	ls := r.Limits()
	if len(ls) == 0 {
		return Limit{}, false
	}
	best := ls[0]
	for _, l := range ls[1:] {
		if l.Bytes < best.Bytes {
			best = l
		}
	}
	return best, true
}

// Limits returns every bound r can read, in no particular order. Files
// that are missing or unparsable contribute nothing: a bound nobody set is
// not a bound, and a garbled one is not worth refusing work over.
func (r Reader) Limits() []Limit {
	var out []Limit
	out = append(out, r.cgroupLimits()...)
	if l, ok := r.meminfo(); ok {
		out = append(out, l)
	}
	out = append(out, r.rlimitLimits()...)
	return out
}

// path maps an absolute system path to one under r.Root.
func (r Reader) path(p string) string {
	if r.Root == "" {
		return p
	}
	return filepath.Join(r.Root, filepath.FromSlash(p))
}

func (r Reader) read(p string) ([]byte, error) { return os.ReadFile(r.path(p)) }

// meminfo reads MemAvailable (MemFree on kernels before 3.14, which lack
// it) from /proc/meminfo.
func (r Reader) meminfo() (Limit, bool) {
	data, err := r.read("/proc/meminfo")
	if err != nil {
		return Limit{}, false
	}
	fields := keyValues(data)
	for _, k := range []string{"MemAvailable", "MemFree"} {
		v, ok := fields[k]
		if !ok {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
		kb, err := strconv.ParseInt(v, 10, 64)
		if err != nil || kb < 0 {
			return Limit{}, false
		}
		return Limit{Bytes: satMul(kb, 1024), Source: "/proc/meminfo " + k}, true
	}
	return Limit{}, false
}

// rlimitLimits turns RLIMIT_AS and RLIMIT_DATA into headroom: the limit
// minus what the process already maps (VmSize) or uses for data (VmData),
// as /proc/self/status reports them.
func (r Reader) rlimitLimits() []Limit {
	get := r.Rlimits
	if get == nil {
		get = systemRlimits
	}
	rls := get()
	if len(rls) == 0 {
		return nil
	}
	var status map[string]string
	if data, err := r.read("/proc/self/status"); err == nil {
		status = keyValues(data)
	}
	usage := map[string]string{"RLIMIT_AS": "VmSize", "RLIMIT_DATA": "VmData"}
	var out []Limit
	for _, rl := range rls {
		if rl.Cur == Unlimited || rl.Cur > math.MaxInt64 {
			continue
		}
		used := int64(0)
		if v, ok := status[usage[rl.Name]]; ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			if kb, err := strconv.ParseInt(v, 10, 64); err == nil && kb > 0 {
				used = satMul(kb, 1024)
			}
		}
		out = append(out, Limit{Bytes: max(int64(rl.Cur)-used, 0), Source: rl.Name})
	}
	return out
}

// cgroupLimits finds the process's memory cgroups (v2 and v1 memory
// controller) through /proc/self/cgroup and /proc/self/mountinfo and
// returns the headroom of the tightest level on each path: a parent's
// limit binds its children too.
func (r Reader) cgroupLimits() []Limit {
	data, err := r.read("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var v1Path, v2Path string
	haveV1, haveV2 := false, false
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2Path, haveV2 = parts[2], true
		case hasField(parts[1], ",", "memory"):
			v1Path, haveV1 = parts[2], true
		}
	}
	mounts, err := r.read("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []Limit
	for _, m := range parseMountinfo(mounts) {
		switch {
		case haveV2 && m.fstype == "cgroup2":
			if l, ok := r.walkCgroup(m, v2Path, "cgroup v2", v2Level); ok {
				out = append(out, l)
			}
		case haveV1 && m.fstype == "cgroup" && hasField(m.superOpts, ",", "memory"):
			if l, ok := r.walkCgroup(m, v1Path, "cgroup v1", v1Level); ok {
				out = append(out, l)
			}
		}
	}
	return out
}

// levelFunc reads one cgroup directory: its headroom, the limit file's
// name, and whether it has a limit at all.
type levelFunc func(r Reader, dir string) (headroom int64, file string, ok bool)

// walkCgroup reads every level from the process's cgroup up to the root
// of mount m and returns the smallest headroom.
func (r Reader) walkCgroup(m mount, cgPath, kind string, level levelFunc) (Limit, bool) {
	// The cgroup path is relative to the hierarchy's root; the mount shows
	// the part of the hierarchy below m.root (all of it, or only the
	// container's own cgroup when it was bind-mounted or namespaced).
	cg, root := path.Clean(cgPath), path.Clean(m.root)
	rel := ""
	switch {
	case root == "/":
		rel = cg
	case strings.HasPrefix(cg, root+"/"):
		rel = cg[len(root):]
	}
	dir := path.Join(m.point, rel)
	if st, err := os.Stat(r.path(dir)); err != nil || !st.IsDir() {
		dir = m.point
	}
	var best Limit
	found := false
	for {
		if h, file, ok := level(r, dir); ok && (!found || h < best.Bytes) {
			best, found = Limit{Bytes: h, Source: fmt.Sprintf("%s %s of %s", kind, file, dir)}, true
		}
		if dir == m.point || dir == "/" || !strings.HasPrefix(dir, m.point) {
			break
		}
		dir = path.Dir(dir)
	}
	return best, found
}

// v2Level reads memory.max, memory.current and memory.stat's inactive_file
// (page cache the kernel reclaims before it kills, so it is headroom).
func v2Level(r Reader, dir string) (int64, string, bool) {
	lim, ok := readLimit(r, path.Join(dir, "memory.max"))
	if !ok {
		return 0, "", false
	}
	cur, _ := readLimit(r, path.Join(dir, "memory.current"))
	inactive := statValue(r, path.Join(dir, "memory.stat"), "inactive_file")
	return headroom(lim, cur, inactive), "memory.max", true
}

// v1Level reads memory.limit_in_bytes, memory.usage_in_bytes and
// memory.stat's total_inactive_file (inactive_file without hierarchy).
func v1Level(r Reader, dir string) (int64, string, bool) {
	lim, ok := readLimit(r, path.Join(dir, "memory.limit_in_bytes"))
	if !ok {
		return 0, "", false
	}
	cur, _ := readLimit(r, path.Join(dir, "memory.usage_in_bytes"))
	inactive := statValue(r, path.Join(dir, "memory.stat"), "total_inactive_file")
	if inactive < 0 {
		inactive = statValue(r, path.Join(dir, "memory.stat"), "inactive_file")
	}
	return headroom(lim, cur, inactive), "memory.limit_in_bytes", true
}

// unlimitedCgroup is where cgroup limit values stop meaning a limit: v1
// reports "no limit" as the largest page-aligned int64 (9223372036854771712).
const unlimitedCgroup = int64(1) << 62

// readLimit parses a single-number cgroup file; "max" and v1's huge
// sentinel are no limit (false).
func readLimit(r Reader, p string) (int64, bool) {
	data, err := r.read(p)
	if err != nil {
		return 0, false
	}
	s := string(bytes.TrimSpace(data))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v >= unlimitedCgroup {
		return 0, false
	}
	return v, true
}

// statValue returns the named counter of a memory.stat file, or -1.
func statValue(r Reader, p, key string) int64 {
	data, err := r.read(p)
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return -1
			}
			return n
		}
	}
	return -1
}

func headroom(limit, current, inactive int64) int64 {
	used := current - max(inactive, 0)
	if used < 0 {
		used = 0
	}
	return max(limit-used, 0)
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	root, point, fstype, superOpts string
}

// parseMountinfo parses mountinfo(5) lines: "id parent maj:min root point
// opts [optional...] - fstype source superopts".
func parseMountinfo(data []byte) []mount {
	var out []mount
	for _, line := range strings.Split(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := mount{root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype: g[0]}
		if len(g) >= 3 {
			m.superOpts = g[2]
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// keyValues parses "Key: value" lines (/proc/meminfo, /proc/self/status).
func keyValues(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

func hasField(list, sep, want string) bool {
	for _, f := range strings.Split(list, sep) {
		if f == want {
			return true
		}
	}
	return false
}

// satMul multiplies non-negative a and b, saturating at MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// FormatBytes formats n in binary units ("16.0 GiB", "512 B").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
