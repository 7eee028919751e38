//go:build !unix

package jaxcache

import (
	"context"
	"os"
	"time"
)

// lockJAX cannot take JAX's flock outside Unix; the grace period alone
// protects files being written.
func lockJAX(context.Context, string, os.FileMode, bool, time.Duration) (func(), bool, error) {
	return func() {}, false, nil
}
