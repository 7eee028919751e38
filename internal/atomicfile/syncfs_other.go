//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

// syncfs is Linux's; elsewhere a batch fsyncs each file (see
// syncfsReportsErrors) and never calls it.
func syncfs(*os.File) error { return errors.New("syncfs: not supported") }

func syncfsReportsErrors() bool { return false }

// fileDev is unused where syncfs is: every file is fsynced by itself.
func fileDev(os.FileInfo) uint64 { return 0 }

func renameNoReplace(*os.File, string, string) error { return errNoReplace }
