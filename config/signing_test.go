package config

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/sign"
)

func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

func TestEd25519FromEnv(t *testing.T) {
	dir := t.TempDir()
	priv, other := testKey(1), testKey(2)
	pemText, err := sign.MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	privFile := filepath.Join(dir, "signing.pem")
	os.WriteFile(privFile, pemText, 0o600)
	badFile := filepath.Join(dir, "bad.pem")
	os.WriteFile(badFile, []byte("not a key\n"), 0o600)
	pub := sign.EncodePublicKey(priv.Public().(ed25519.PublicKey))
	otherPub := sign.EncodePublicKey(other.Public().(ed25519.PublicKey))
	pubFile := filepath.Join(dir, "verify.keys")
	os.WriteFile(pubFile, []byte("# the old key\n"+otherPub+"\n"), 0o644)
	id := sign.IDOf(priv.Public().(ed25519.PublicKey))
	otherID := sign.IDOf(other.Public().(ed25519.PublicKey))

	ok := []struct {
		name    string
		env     map[string]string
		canSign bool
		ids     []sign.KeyID
	}{
		{"writer", map[string]string{EnvSigningPrivateKeyFile: privFile}, true, []sign.KeyID{id}},
		{"reader", map[string]string{EnvVerifyKeys: pub}, false, []sign.KeyID{id}},
		{"reader, rotation", map[string]string{EnvVerifyKeys: pub + "," + otherPub}, false, []sign.KeyID{id, otherID}},
		{"reader, list and file", map[string]string{EnvVerifyKeys: pub, EnvVerifyKeysFile: pubFile}, false, []sign.KeyID{id, otherID}},
		{"writer accepting the old key", map[string]string{EnvSigningPrivateKeyFile: privFile, EnvVerifyKeysFile: pubFile}, true, []sign.KeyID{id, otherID}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			o, err := FromEnv(envOf(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			k := o.SigningKey
			if k.Scheme() != sign.Ed25519 || k.CanSign() != tc.canSign {
				t.Fatalf("keys %v", k)
			}
			for _, want := range tc.ids {
				found := false
				for _, got := range k.VerifyIDs() {
					found = found || got == want
				}
				if !found {
					t.Errorf("key %s not accepted (%v)", want, k)
				}
			}
			if len(k.VerifyIDs()) != len(tc.ids) {
				t.Errorf("accepts %v, want %v", k.VerifyIDs(), tc.ids)
			}
			settings := map[string]Setting{}
			for _, s := range EnvSettings(o, envOf(tc.env)) {
				settings[s.Name] = s
			}
			if s := settings[EnvVerifyKeys]; !strings.Contains(s.Value, id.String()) && tc.env[EnvVerifyKeysFile] == "" {
				t.Errorf("env shows %+v", s)
			}
			for _, s := range settings {
				if strings.Contains(s.Value, "PRIVATE") || strings.Contains(s.Value, string(pemText[30:50])) {
					t.Errorf("env leaks the private key: %+v", s)
				}
			}
		})
	}

	bad := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{EnvSigningPrivateKeyFile: badFile}, []string{EnvSigningPrivateKeyFile, badFile}},
		{map[string]string{EnvSigningPrivateKeyFile: filepath.Join(dir, "missing")}, []string{EnvSigningPrivateKeyFile}},
		{map[string]string{EnvVerifyKeys: "abc,def"}, []string{EnvVerifyKeys, "key 1"}},
		{map[string]string{EnvVerifyKeys: pub + ",short"}, []string{EnvVerifyKeys, "key 2"}},
		{map[string]string{EnvVerifyKeysFile: badFile}, []string{EnvVerifyKeysFile}},
		{map[string]string{EnvSigningKey: "k", EnvVerifyKeys: pub}, []string{EnvSigningKey, EnvVerifyKeys, "both set"}},
		{map[string]string{EnvSigningKeyFile: privFile, EnvSigningPrivateKeyFile: privFile}, []string{EnvSigningKeyFile, EnvSigningPrivateKeyFile, "both set"}},
	}
	for _, tc := range bad {
		t.Run(strings.Join(tc.want, "_"), func(t *testing.T) {
			_, err := FromEnv(envOf(tc.env))
			if err == nil {
				t.Fatalf("no error for %v", tc.env)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// The Ed25519 private key never reaches a terminal: the redactor hides
// its file's text and each line of its PEM body.
func TestRedactPrivateKey(t *testing.T) {
	pemText, _ := sign.MarshalPrivateKey(testKey(3))
	f := filepath.Join(t.TempDir(), "k.pem")
	os.WriteFile(f, pemText, 0o600)
	body := strings.Split(strings.TrimSpace(string(pemText)), "\n")[1]
	redact := NewRedactor(envOf(map[string]string{EnvSigningPrivateKeyFile: f}))
	for _, text := range []string{"key: " + body, "whole: " + string(pemText)} {
		if got := redact(text); strings.Contains(got, body) || !strings.Contains(got, Redacted) {
			t.Errorf("redacted %q to %q", text, got)
		}
	}
}
