package config

import (
	"io"
	"os"
	"regexp"
	"strings"
)

// Redacted replaces a secret in text meant for people.
const Redacted = "<redacted>"

var (
	// urlUserinfo matches the user:password@ of a URL.
	urlUserinfo = regexp.MustCompile(`(://)[^/@\s"']+@`)
	// urlSecretParam matches a query parameter whose name says it holds a
	// secret (AWS's presigned X-Amz-Signature and X-Amz-Credential and
	// X-Amz-Security-Token, secret_key, password, token, ...).
	urlSecretParam = regexp.MustCompile(`(?i)([?&](?:[a-z0-9_-]*(?:secret|password|passwd|token|signature|credential|access[_-]?key)[a-z0-9_-]*)=)[^&\s"']*`)
)

// RedactURL returns text with the credentials written into URLs replaced
// by Redacted: a user:password@ and query parameters named for a secret.
// It works on any text (an error message quoting a URL), not only a URL.
func RedactURL(text string) string {
	text = urlUserinfo.ReplaceAllString(text, "${1}"+Redacted+"@")
	return urlSecretParam.ReplaceAllString(text, "${1}"+Redacted)
}

// minRedactedKey is the shortest signing key Redact looks for: replacing
// every "a" of a message would hide more than it protects.
const minRedactedKey = 4

// Redact returns text with the secrets the environment (lookup) configures
// replaced by Redacted: see NewRedactor.
func Redact(text string, lookup func(string) (string, bool)) string {
	return NewRedactor(lookup)(text)
}

// NewRedactor returns a function that replaces, in text meant for people,
// the secrets the environment (lookup) configures by Redacted: the
// signing key, from XLACACHE_SIGNING_KEY or the file
// XLACACHE_SIGNING_KEY_FILE names, the Ed25519 private key of
// XLACACHE_SIGNING_PRIVATE_KEY_FILE (files read once, now), and credentials in
// URLs (RedactURL). The CLI passes every error and log line it prints
// through one, so that a key or password quoted by any layer below never
// reaches a terminal or a job log.
func NewRedactor(lookup func(string) (string, bool)) func(string) string {
	var keys []string
	if v, ok := lookup(EnvSigningKey); ok {
		keys = append(keys, v, strings.TrimSpace(v))
	}
	if p, ok := lookup(EnvSigningKeyFile); ok && strings.TrimSpace(p) != "" {
		if f, err := os.Open(strings.TrimSpace(p)); err == nil {
			b, _ := io.ReadAll(io.LimitReader(f, 1<<16))
			f.Close()
			keys = append(keys, strings.TrimRight(string(b), "\r\n"), strings.TrimSpace(string(b)))
		}
	}
	// An Ed25519 private key is as secret as an HMAC key: its file's
	// text, and each line of a PEM body, are hidden too.
	if p, ok := lookup(EnvSigningPrivateKeyFile); ok && strings.TrimSpace(p) != "" {
		if b, err := readKeyFile(strings.TrimSpace(p)); err == nil {
			keys = append(keys, strings.TrimSpace(string(b)))
			for line := range strings.Lines(string(b)) {
				if t := strings.TrimSpace(line); !strings.HasPrefix(t, "-----") {
					keys = append(keys, t)
				}
			}
		}
	}
	return func(text string) string {
		for _, k := range keys {
			if len(k) >= minRedactedKey {
				text = strings.ReplaceAll(text, k, Redacted)
			}
		}
		return RedactURL(text)
	}
}
