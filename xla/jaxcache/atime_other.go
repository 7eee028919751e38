//go:build !linux

package jaxcache

import (
	"errors"
	"io/fs"
	"time"
)

// fileAtime is not read outside Linux; the modification time stands in.
func fileAtime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

// fileCtime is not read outside Linux.
func fileCtime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }

// dirAtimeMode: outside Linux the mount flags are not read, so loads are
// not told.
func dirAtimeMode(string) AtimeMode { return AtimeUnknown }

// rearm is not done outside Linux.
func rearm(string, time.Time) error { return errors.New("access times are read on Linux only") }
