//go:build !linux

package jaxcache

import (
	"io/fs"
	"time"
)

// fileAtime is not read outside Linux; the modification time stands in.
func fileAtime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }
