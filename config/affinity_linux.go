package config

import "golang.org/x/sys/unix"

// affinityCPUs is the number of CPUs in this process's affinity mask now
// (runtime.NumCPU reads it only at process start), or 0 if it cannot be
// read.
func affinityCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0
	}
	return set.Count()
}
