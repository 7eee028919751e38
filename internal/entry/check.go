package entry

import (
	"errors"
	"fmt"

	"github.com/xlacache/xlacache/internal/sign"
)

// OtherKey reports whether err (from Decode) says the entry is whole but
// signed with a key or scheme this process does not hold: an HMAC that
// does not verify (a wrong key and an alteration look alike to HMAC), or
// an Ed25519 signature naming a key id that is not accepted. Such an entry
// may be good for a process with that key, and is left in place, never
// repaired. An Ed25519 signature that names an accepted key and does not
// verify is not that: the entry was altered after signing, and is damage.
func OtherKey(err error) bool {
	return errors.Is(err, ErrSignature) && !errors.Is(err, sign.ErrBadSignature)
}

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
