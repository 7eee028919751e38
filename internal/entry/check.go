package entry

import (
	"fmt"

	"github.com/xlacache/xlacache/internal/sign"
)

// DecodeAs is Decode that also requires the entry to hold key. A file or
// object is named by the key it claims to hold; one holding another key (a
// renamed or misplaced file, a hostile archive member) is corrupt, and must
// never be served as that key.
func DecodeAs(b []byte, key string, keys *sign.Keys) (*Entry, error) {
	e, err := Decode(b, keys)
	if err != nil {
		return nil, err
	}
	if e.Key != key {
		return nil, fmt.Errorf("%w: holds key %q, named %q", ErrCorrupt, e.Key, key)
	}
	return e, nil
}
