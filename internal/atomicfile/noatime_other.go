//go:build !linux

package atomicfile

// noAtime: only Linux has O_NOATIME; elsewhere reads are ordinary ones.
const noAtime = 0
