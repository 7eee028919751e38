package config

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// MaxCPUThreads bounds XLACACHE_CPU_THREADS: far more threads than any
// host has cores only adds wake-up and scheduling cost.
const MaxCPUThreads = 1024

var (
	affinityOnce  sync.Once
	affinityCount int
)

// DefaultCPUThreads is the thread count the cpu backend's kernels use when
// CPUThreads is zero: the CPUs in the process's affinity mask (what
// taskset, cgroup cpusets and Slurm's binding leave it), read once per
// process, or runtime.NumCPU where the mask cannot be read.
func DefaultCPUThreads() int {
	affinityOnce.Do(func() {
		affinityCount = runtime.NumCPU()
		if n := affinityCPUs(); n > 0 {
			affinityCount = n
		}
		if affinityCount < 1 {
			affinityCount = 1
		}
		if affinityCount > MaxCPUThreads {
			affinityCount = MaxCPUThreads
		}
	})
	return affinityCount
}

// EffectiveCPUThreads is the number of threads the cpu backend's kernels
// run on: CPUThreads, or DefaultCPUThreads when it is zero.
func (o Options) EffectiveCPUThreads() int {
	if o.CPUThreads > 0 {
		return o.CPUThreads
	}
	return DefaultCPUThreads()
}

// ParseCPUThreads parses an XLACACHE_CPU_THREADS value: a whole number of
// threads from 1 to MaxCPUThreads.
func ParseCPUThreads(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a thread count (a whole number from 1 to %d)", s, MaxCPUThreads)
	}
	if n < 1 || n > MaxCPUThreads {
		return 0, fmt.Errorf("thread count %d is outside 1..%d", n, MaxCPUThreads)
	}
	return int(n), nil
}

// CPUThreadsFromEnv reads XLACACHE_CPU_THREADS alone through lookup (pass
// os.LookupEnv), for code that builds a cpu backend without a full
// Options: unset or empty gives DefaultCPUThreads, a bad value an error
// naming the variable.
func CPUThreadsFromEnv(lookup func(string) (string, bool)) (int, error) {
	v, ok := lookup(EnvCPUThreads)
	if !ok {
		return DefaultCPUThreads(), nil
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return DefaultCPUThreads(), nil
	}
	n, err := ParseCPUThreads(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %w", EnvCPUThreads, v, err)
	}
	return n, nil
}
