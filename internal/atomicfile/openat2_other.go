//go:build !linux

package atomicfile

import "errors"

// fastOpenAvailable: no openat2 here; Dir always uses os.Root.
const fastOpenAvailable = false

var (
	errFastUnavailable = errors.New("openat2 unavailable")
	errFastRetry       = errors.New("openat2 raced with a rename")
	errFastRefused     = errors.New("refused by openat2")
)

func openat2Beneath(int, string) (int, error) { return -1, errFastUnavailable }

func unwrapErrno(err error) error { return err }
