//go:build !linux

package config

// affinityCPUs is 0 where there is no affinity mask to read:
// runtime.NumCPU is used instead.
func affinityCPUs() int { return 0 }
