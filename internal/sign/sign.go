// Package sign holds the keys that sign and verify what xlacache stores:
// an HMAC-SHA256 secret (every holder can both verify and forge) or
// Ed25519 keys (a writer holds the private key and signs; readers hold only
// public keys and can verify, never sign).
//
// A *Keys is what the rest of the module threads where it once threaded
// an HMAC key as []byte. A nil *Keys means "unsigned": nothing is signed
// and nothing is required to be. Every method is safe on nil.
//
// An Ed25519 signature is Ed25519ctx (RFC 8032, context "xlacache-v1") over
// the SHA-256 of the message, so that callers can stream a message of any
// size through a Hash, and so that verifying a large entry costs about
// what its HMAC did (SHA-256 runs on the CPU's SHA extensions; Ed25519ph's
// SHA-512 was three times slower on a 1 MiB entry); on the wire a signature
// is the signer's KeyID (8 bytes) followed by the 64-byte signature, so that
// several public keys can be accepted at once during a rotation.
// HMAC signatures are the bare 32-byte HMAC-SHA256, byte for byte what
// xlacache wrote before Ed25519 existed.
package sign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
)

// Scheme is a signature scheme, as recorded in what is signed.
type Scheme uint8

const (
	// None: not signed.
	None Scheme = 0
	// HMAC is HMAC-SHA256 with a shared secret.
	HMAC Scheme = 1
	// Ed25519 is Ed25519ctx over a SHA-256, with a KeyID prefix.
	Ed25519 Scheme = 2
)

// String names the scheme.
func (s Scheme) String() string {
	switch s {
	case None:
		return "none"
	case HMAC:
		return "hmac-sha256"
	case Ed25519:
		return "ed25519"
	}
	return fmt.Sprintf("scheme(%d)", uint8(s))
}

// SigSize is the size of a signature of scheme s on the wire (0 for an
// unknown scheme).
func (s Scheme) SigSize() int {
	switch s {
	case HMAC:
		return sha256.Size
	case Ed25519:
		return KeyIDSize + ed25519.SignatureSize
	}
	return 0
}

// KeyIDSize is the size of a KeyID.
const KeyIDSize = 8

// KeyID names an Ed25519 public key: the first 8 bytes of its SHA-256.
// It is public (derived from a public key) and what `xlacache env`,
// `keygen` and `verify` print.
type KeyID [KeyIDSize]byte

// String is the id in hex.
func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

// IDOf returns the KeyID of an Ed25519 public key.
func IDOf(pub ed25519.PublicKey) KeyID {
	sum := sha256.Sum256(pub)
	var id KeyID
	copy(id[:], sum[:KeyIDSize])
	return id
}

// context separates xlacache's Ed25519 signatures from any other use of
// the same key.
const context = "xlacache-v1"

// Errors returned (wrapped) by verification and signing.
var (
	// ErrOtherKey: the signature is by a key or scheme this process does
	// not hold (an HMAC that does not verify is reported so too, since a
	// wrong key and a forgery look the same to HMAC). Such an object may
	// be good for a process with the right key: leave it in place.
	ErrOtherKey = errors.New("signed with another key")
	// ErrBadSignature: an Ed25519 signature names a key this process
	// accepts but does not verify: the object was altered after signing.
	ErrBadSignature = errors.New("signature does not verify")
	// ErrCannotSign: this process holds only public keys.
	ErrCannotSign = errors.New("no signing key (verify-only)")
)

// Keys is what one process signs and verifies with. Build one with
// NewHMAC or NewEd25519; the zero of *Keys (nil) is unsigned.
type Keys struct {
	hmacKey []byte
	priv    ed25519.PrivateKey
	privID  KeyID
	pubs    map[KeyID]ed25519.PublicKey
}

// NewHMAC returns keys that sign and verify with the HMAC secret key; an
// empty key returns nil (unsigned).
func NewHMAC(key []byte) *Keys {
	if len(key) == 0 {
		return nil
	}
	return &Keys{hmacKey: bytes.Clone(key)}
}

// NewEd25519 returns keys that sign with priv (nil: verify only) and
// accept signatures by priv's own public key and by each of pubs. With
// neither it returns nil (unsigned).
func NewEd25519(priv ed25519.PrivateKey, pubs ...ed25519.PublicKey) (*Keys, error) {
	k := &Keys{pubs: make(map[KeyID]ed25519.PublicKey)}
	if priv != nil {
		if len(priv) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("ed25519 private key of %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
		}
		k.priv = slices.Clone(priv)
		pub := k.priv.Public().(ed25519.PublicKey)
		k.privID = IDOf(pub)
		k.pubs[k.privID] = pub
	}
	for _, p := range pubs {
		if len(p) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("ed25519 public key of %d bytes, want %d", len(p), ed25519.PublicKeySize)
		}
		k.pubs[IDOf(p)] = slices.Clone(p)
	}
	if len(k.pubs) == 0 {
		return nil, nil
	}
	return k, nil
}

// Enabled reports whether anything is signed or verified: false for nil.
func (k *Keys) Enabled() bool { return k != nil }

// CanSign reports whether k can sign: an HMAC key, or an Ed25519 private
// key. A verify-only process (Ed25519 public keys alone) cannot.
func (k *Keys) CanSign() bool { return k != nil && (k.hmacKey != nil || k.priv != nil) }

// Scheme is the scheme k signs and verifies with (None for nil).
func (k *Keys) Scheme() Scheme {
	switch {
	case k == nil:
		return None
	case k.hmacKey != nil:
		return HMAC
	}
	return Ed25519
}

// SignerID is the KeyID that k's Ed25519 signatures carry, and whether it
// has one.
func (k *Keys) SignerID() (KeyID, bool) {
	if k == nil || k.priv == nil {
		return KeyID{}, false
	}
	return k.privID, true
}

// VerifyIDs are the KeyIDs of the Ed25519 public keys k accepts, sorted.
func (k *Keys) VerifyIDs() []KeyID {
	if k == nil {
		return nil
	}
	ids := make([]KeyID, 0, len(k.pubs))
	for id := range k.pubs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b KeyID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// String describes k without its secrets: the scheme, and for Ed25519
// the key ids (public), for `xlacache env` and log lines.
func (k *Keys) String() string {
	switch k.Scheme() {
	case None:
		return "unsigned"
	case HMAC:
		return fmt.Sprintf("hmac-sha256 (%d-byte secret)", len(k.hmacKey))
	}
	var b strings.Builder
	b.WriteString("ed25519")
	if id, ok := k.SignerID(); ok {
		fmt.Fprintf(&b, " signs as %s;", id)
	} else {
		b.WriteString(" verify-only;")
	}
	b.WriteString(" accepts")
	for i, id := range k.VerifyIDs() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(id.String())
	}
	return b.String()
}

// Equal reports whether k and o hold the same keys.
func (k *Keys) Equal(o *Keys) bool {
	if k == nil || o == nil {
		return k == o
	}
	return bytes.Equal(k.hmacKey, o.hmacKey) && k.priv.Equal(o.priv) && slices.Equal(k.VerifyIDs(), o.VerifyIDs())
}

// Hash accumulates a message, written in any number of pieces, to sign
// or verify it: for callers that stream what they sign.
type Hash struct {
	k      *Keys
	scheme Scheme
	h      hash.Hash
}

// Signer returns a Hash to sign a message with k's signing key, or
// ErrCannotSign.
func (k *Keys) Signer() (*Hash, error) {
	if !k.CanSign() {
		return nil, ErrCannotSign
	}
	return k.newHash(k.Scheme()), nil
}

// Verifier returns a Hash to verify a message signed with scheme s, or
// ErrOtherKey when k holds no key of that scheme (nil k holds none).
func (k *Keys) Verifier(s Scheme) (*Hash, error) {
	if k.Scheme() != s || s == None {
		return nil, fmt.Errorf("%w: a %s signature, and this process verifies %s", ErrOtherKey, s, k.Scheme())
	}
	return k.newHash(s), nil
}

func (k *Keys) newHash(s Scheme) *Hash {
	if s == HMAC {
		return &Hash{k: k, scheme: s, h: hmac.New(sha256.New, k.hmacKey)}
	}
	return &Hash{k: k, scheme: s, h: sha256.New()}
}

// signed is what an Ed25519 signature covers: a tag naming the digest,
// then the message's SHA-256.
func (h *Hash) signed() []byte {
	return h.h.Sum([]byte("sha256\x00"))
}

// Write adds p to the message; it never fails.
func (h *Hash) Write(p []byte) (int, error) { return h.h.Write(p) }

// Sign returns the signature of the message written so far (for a Hash
// from Signer).
func (h *Hash) Sign() ([]byte, error) {
	if h.scheme == HMAC {
		return h.h.Sum(nil), nil
	}
	if h.k.priv == nil {
		return nil, ErrCannotSign
	}
	sig, err := h.k.priv.Sign(nil, h.signed(), &ed25519.Options{Context: context})
	if err != nil {
		return nil, fmt.Errorf("ed25519 signing: %w", err)
	}
	return append(h.k.privID[:], sig...), nil
}

// Verify checks sig against the message written so far: nil, or an error
// wrapping ErrOtherKey or ErrBadSignature.
func (h *Hash) Verify(sig []byte) error {
	if len(sig) != h.scheme.SigSize() {
		return fmt.Errorf("%w: %s signature of %d bytes", ErrBadSignature, h.scheme, len(sig))
	}
	if h.scheme == HMAC {
		if !hmac.Equal(h.h.Sum(nil), sig) {
			return fmt.Errorf("%w (or altered): HMAC does not verify", ErrOtherKey)
		}
		return nil
	}
	var id KeyID
	copy(id[:], sig)
	pub, ok := h.k.pubs[id]
	if !ok {
		return fmt.Errorf("%w: ed25519 key %s is not among the accepted keys", ErrOtherKey, id)
	}
	if err := ed25519.VerifyWithOptions(pub, h.signed(), sig[KeyIDSize:], &ed25519.Options{Context: context}); err != nil {
		return fmt.Errorf("%w: ed25519 key %s", ErrBadSignature, id)
	}
	return nil
}

// SignerOf returns the KeyID an Ed25519 signature names, if sig has the
// size of one.
func SignerOf(s Scheme, sig []byte) (KeyID, bool) {
	var id KeyID
	if s != Ed25519 || len(sig) != s.SigSize() {
		return id, false
	}
	copy(id[:], sig)
	return id, true
}

// Sign signs msg whole (see Signer).
func (k *Keys) Sign(msg []byte) ([]byte, error) {
	h, err := k.Signer()
	if err != nil {
		return nil, err
	}
	h.Write(msg)
	return h.Sign()
}

// Verify checks a signature of scheme s over msg whole (see Verifier).
func (k *Keys) Verify(s Scheme, msg, sig []byte) error {
	h, err := k.Verifier(s)
	if err != nil {
		return err
	}
	h.Write(msg)
	return h.Verify(sig)
}

// Text signatures, for JSON records (lease records, archive manifests):
// an HMAC is bare hex, as it always was; an Ed25519 signature is
// "ed25519:" and the hex of its wire form.
const textPrefix = "ed25519:"

// SignText signs msg and returns the signature as text.
func (k *Keys) SignText(msg []byte) (string, error) {
	sig, err := k.Sign(msg)
	if err != nil {
		return "", err
	}
	if k.Scheme() == Ed25519 {
		return textPrefix + hex.EncodeToString(sig), nil
	}
	return hex.EncodeToString(sig), nil
}

// VerifyText checks a signature made by SignText.
func (k *Keys) VerifyText(msg []byte, text string) error {
	s, hexSig := HMAC, text
	if rest, ok := strings.CutPrefix(text, textPrefix); ok {
		s, hexSig = Ed25519, rest
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return fmt.Errorf("%w: signature text is not hex", ErrBadSignature)
	}
	return k.Verify(s, msg, sig)
}
