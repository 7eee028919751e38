package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"sort"
	"strings"

	"github.com/xlacache/xlacache/internal/entry"
)

// KeyVersion is mixed into every key. Bump it when key derivation or the
// meaning of a component changes, so old entries simply stop matching.
const KeyVersion = "xlacache-key-v1"

// MaxModuleLen bounds the module-name prefix of a key, keeping file names
// well under common 255-byte limits.
const MaxModuleLen = 120

// PartDigest is the SHA-256 digest of one named key component. Entries store
// them so that a miss can be explained by the component that differs.
type PartDigest = entry.PartDigest

// Key identifies one cache entry: a module name for humans and a digest over
// every component that determines what a compile produces.
type Key struct {
	// Module is the sanitized module name (safe as a file-name prefix).
	Module string
	// Digest is the domain-separated SHA-256 over the part digests.
	Digest [32]byte
	// Parts are the per-component digests, sorted by name.
	Parts []PartDigest
}

// NewKey derives a key. Each part is hashed on its own with a
// domain-separated, length-prefixed SHA-256 (so "ab"+"c" and "a"+"bc" never
// collide, nor a part moved to another name); the key digest then hashes the
// version, the module name and the sorted (name, digest) list. The module
// name is sanitized so the key text can never escape a directory.
func NewKey(module string, parts []KeyPart) Key {
	k := Key{Module: SanitizeModule(module)}
	k.Parts = make([]PartDigest, 0, len(parts))
	for _, p := range parts {
		k.Parts = append(k.Parts, PartDigest{Name: p.Name, Digest: partDigest(p.Name, p.Data)})
	}
	sort.SliceStable(k.Parts, func(i, j int) bool { return k.Parts[i].Name < k.Parts[j].Name })
	k.Digest = keyDigest(k.Module, k.Parts)
	return k
}

func partDigest(name string, data []byte) [32]byte {
	return digest("part", name, len(data), func(h hash.Hash) { h.Write(data) })
}

func keyDigest(module string, parts []PartDigest) [32]byte {
	return digest("key", module, len(parts), func(h hash.Hash) {
		for _, p := range parts {
			writeField(h, p.Name)
			h.Write(p.Digest[:])
		}
	})
}

// digest is the SHA-256 of the header every key digest starts with (the
// domain KeyVersion+"/"+kind, a name and the body's length) followed by
// what body writes.
func digest(kind, name string, n int, body func(h hash.Hash)) [32]byte {
	h := sha256.New()
	writeField(h, KeyVersion+"/"+kind)
	writeField(h, name)
	writeLen(h, n)
	body(h)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// writeField writes s, prefixed with its length.
func writeField(h hash.Hash, s string) {
	writeLen(h, len(s))
	h.Write([]byte(s))
}

// writeLen writes n as the 8-byte little-endian length prefix every
// variable-length field (and list) in a key digest carries.
func writeLen(h hash.Hash, n int) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

// String returns the key text "<module>-<64 hex>". The module is
// sanitized again here, so a Key built by hand with a hostile module name
// still names a plain file inside its tier.
func (k Key) String() string {
	return safeModule(k.Module) + "-" + hex.EncodeToString(k.Digest[:])
}

// safeModule returns m when it is already in sanitized form (no
// allocation), else SanitizeModule(m).
func safeModule(m string) string {
	if m == "" || len(m) > MaxModuleLen || m[0] == '.' {
		return SanitizeModule(m)
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return SanitizeModule(m)
		}
	}
	return m
}

// IsZero reports whether k is the zero Key.
func (k Key) IsZero() bool { return k.Module == "" && k.Digest == [32]byte{} }

// SanitizeModule maps a module name to a safe file-name prefix: letters,
// digits, '_', '.' and '-' are kept, everything else becomes '_'; a leading
// '.' becomes '_' (no hidden files, no "..") and the result is at most
// MaxModuleLen bytes. An empty name becomes "module".
func SanitizeModule(name string) string {
	var b strings.Builder
	for i := 0; i < len(name) && b.Len() < MaxModuleLen; i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		case c == '.' && b.Len() > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "module"
	}
	return b.String()
}

// ParseKey parses key text "<module>-<64 hex>". The module must already be
// in sanitized form, so a parsed key is always safe as a file name.
func ParseKey(s string) (module string, digest [32]byte, err error) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return "", digest, fmt.Errorf("key %q: want <module>-<64 hex digits>", s)
	}
	module, hexPart := s[:i], s[i+1:]
	if len(hexPart) != 64 {
		return "", digest, fmt.Errorf("key %q: digest has %d hex digits, want 64", s, len(hexPart))
	}
	if strings.ToLower(hexPart) != hexPart {
		return "", digest, fmt.Errorf("key %q: digest must be lower-case hex", s)
	}
	if _, err := hex.Decode(digest[:], []byte(hexPart)); err != nil {
		return "", digest, fmt.Errorf("key %q: %w", s, err)
	}
	if SanitizeModule(module) != module {
		return "", digest, fmt.Errorf("key %q: module name %q has characters not allowed in a key", s, module)
	}
	return module, digest, nil
}

// keyFromText rebuilds a Key (without parts) from its text.
func keyFromText(s string) (Key, error) {
	m, d, err := ParseKey(s)
	if err != nil {
		return Key{}, err
	}
	return Key{Module: m, Digest: d}, nil
}
