package cache

import (
	"errors"
	"fmt"
)

// Err is the error a verification of dir with result r ends with: one
// for the damaged entries and one for the entries signed with another
// key, nil when every entry checked is good.
func (r VerifyResult) Err(dir string) error {
	var errs []error
	if n := len(r.Bad) - r.KeyMismatches; n > 0 {
		errs = append(errs, fmt.Errorf("%d damaged entr%s in %s", n, entries(n), dir))
	}
	if n := r.KeyMismatches; n > 0 {
		errs = append(errs, fmt.Errorf("%d entr%s in %s signed with another key", n, entries(n), dir))
	}
	return errors.Join(errs...)
}

// entries is the ending of "entr" for n entries.
func entries(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}
