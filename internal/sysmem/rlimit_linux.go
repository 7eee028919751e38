package sysmem

import "golang.org/x/sys/unix"

// systemRlimits reads the soft RLIMIT_AS and RLIMIT_DATA of the process.
func systemRlimits() []Rlimit {
	var out []Rlimit
	for _, r := range []struct {
		name string
		res  int
	}{{"RLIMIT_AS", unix.RLIMIT_AS}, {"RLIMIT_DATA", unix.RLIMIT_DATA}} {
		var rl unix.Rlimit
		if err := unix.Getrlimit(r.res, &rl); err != nil {
			continue
		}
		out = append(out, Rlimit{Name: r.name, Cur: rl.Cur})
	}
	return out
}
