package sign

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// maxKeyText bounds the key text the parsers look at: a key file is a few
// hundred bytes, and a variable pointing at a huge file is a mistake.
const maxKeyText = 64 << 10

// ParsePrivateKey parses an Ed25519 private key: a PEM "PRIVATE KEY"
// block (PKCS #8, what `xlacache keygen` and `openssl genpkey -algorithm
// ed25519` write), or the base64 or hex of the 32-byte seed (or of the
// 64-byte seed+public key Go uses). Surrounding white space is ignored.
func ParsePrivateKey(text []byte) (ed25519.PrivateKey, error) {
	if len(text) > maxKeyText {
		return nil, fmt.Errorf("private key text of %d bytes is implausible", len(text))
	}
	s := strings.TrimSpace(string(text))
	if strings.HasPrefix(s, "-----BEGIN") {
		return parsePEM[ed25519.PrivateKey](s, "PRIVATE KEY", "PKCS #8", x509.ParsePKCS8PrivateKey)
	}
	b, err := decodeBytes(s)
	if err != nil {
		return nil, err
	}
	switch len(b) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case ed25519.PrivateKeySize:
		// The second half must be the first half's public key, or the
		// signatures would name (and verify under) the wrong key.
		priv := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
		if !priv.Equal(ed25519.PrivateKey(b)) {
			return nil, errors.New("64-byte key whose public half does not match its seed")
		}
		return priv, nil
	}
	return nil, fmt.Errorf("%d bytes, want a %d-byte seed", len(b), ed25519.SeedSize)
}

// ParsePublicKey parses one Ed25519 public key: a PEM "PUBLIC KEY" block
// (PKIX), or the base64 or hex of its 32 bytes.
func ParsePublicKey(text string) (ed25519.PublicKey, error) {
	s := strings.TrimSpace(text)
	if len(s) > maxKeyText {
		return nil, fmt.Errorf("public key text of %d bytes is implausible", len(s))
	}
	if strings.HasPrefix(s, "-----BEGIN") {
		return parsePEM[ed25519.PublicKey](s, "PUBLIC KEY", "PKIX", x509.ParsePKIXPublicKey)
	}
	b, err := decodeBytes(s)
	if err != nil {
		return nil, err
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%d bytes, want %d", len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// ParsePublicKeys parses a list of Ed25519 public keys: PEM blocks one
// after another, or base64/hex keys separated by commas, white space or
// new lines; lines starting with # are comments. Several keys are how a
// rotation works: readers accept the old and the new key until every
// writer signs with the new one. The same key twice is one key.
func ParsePublicKeys(text string) ([]ed25519.PublicKey, error) {
	if len(text) > maxKeyText {
		return nil, fmt.Errorf("public key list of %d bytes is implausible", len(text))
	}
	var keys []ed25519.PublicKey
	var rest []string
	for line := range strings.Lines(text) {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		rest = append(rest, line)
	}
	s := strings.TrimSpace(strings.Join(rest, ""))
	for n := 1; s != ""; n++ {
		var item string
		if strings.HasPrefix(s, "-----BEGIN") {
			end := strings.Index(s, "-----END")
			if end < 0 {
				return nil, fmt.Errorf("key %d: unterminated PEM block", n)
			}
			stop := strings.Index(s[end+8:], "-----")
			if stop < 0 {
				return nil, fmt.Errorf("key %d: unterminated PEM block", n)
			}
			item, s = s[:end+8+stop+5], s[end+8+stop+5:]
		} else {
			i := strings.IndexAny(s, ", \t\r\n")
			if i < 0 {
				i = len(s)
			}
			item, s = s[:i], s[i:]
		}
		s = strings.TrimLeft(s, ", \t\r\n")
		k, err := ParsePublicKey(item)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", n, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no public key")
	}
	return keys, nil
}

// decodeBytes decodes hex (an even number of hex digits) or base64 (with
// or without padding, standard or URL alphabet).
func decodeBytes(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty key")
	}
	if b, err := hex.DecodeString(s); err == nil {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("neither PEM, hex nor base64")
}

// GenerateKey makes a new Ed25519 key pair.
func GenerateKey() (ed25519.PrivateKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ed25519 key: %w", err)
	}
	return priv, nil
}

// MarshalPrivateKey returns priv as a PEM "PRIVATE KEY" block (PKCS #8).
func MarshalPrivateKey(priv ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding the private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey returns pub in the base64 form XLACACHE_VERIFY_KEYS
// takes.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(pub)
}

// WritePrivateKeyFile writes priv to a new file at path (PEM, mode 0600),
// refusing to replace an existing file: overwriting a CI writer's key by
// mistake would orphan every entry it signed.
func WritePrivateKeyFile(path string, priv ed25519.PrivateKey) error {
	b, err := MarshalPrivateKey(priv)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing the private key: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("writing the private key %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("writing the private key %s: %w", path, err)
	}
	return nil
}

// parsePEM decodes s as exactly one PEM block of type blockType and its
// DER bytes with parse (format names the encoding in errors), and wants
// a key of type K (an Ed25519 private or public key).
func parsePEM[K any](s, blockType, format string, parse func([]byte) (any, error)) (K, error) {
	var zero K
	block, rest := pem.Decode([]byte(s))
	if block == nil {
		return zero, errors.New("malformed PEM")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return zero, errors.New("more than one PEM block")
	}
	if block.Type != blockType {
		return zero, fmt.Errorf("PEM block %q, want %q (%s)", block.Type, blockType, format)
	}
	k, err := parse(block.Bytes)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", format, err)
	}
	key, ok := k.(K)
	if !ok {
		return zero, fmt.Errorf("a %T, not an Ed25519 key", k)
	}
	return key, nil
}
