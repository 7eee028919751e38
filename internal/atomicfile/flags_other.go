//go:build !unix

package atomicfile

// Elsewhere os.Root's own checks are all there is.
const (
	noFollow = 0
	noBlock  = 0
)
