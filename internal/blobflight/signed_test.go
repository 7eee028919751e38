package blobflight

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// With a signing key, a lease that anyone who can write the bucket
// planted on a predictable name — unsigned, or signed with another key —
// and keeps alive costs a waiter nothing: it compiles at once, after one
// log line, instead of waiting the whole Wait for an entry that never
// comes. A lease signed with the job's key is waited for as before.
func TestForgedLeaseCostsNoWait(t *testing.T) {
	hmacKey := sign.NewHMAC([]byte("the job's key"))
	edPriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	edWriter, _ := sign.NewEd25519(edPriv)
	edReader, _ := sign.NewEd25519(nil, edPriv.Public().(ed25519.PublicKey))
	edOther, _ := sign.NewEd25519(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)))
	for _, tc := range []struct {
		name   string
		holder *sign.Keys // the planted holder's keys; nil: unsigned
		key    *sign.Keys // the waiter's
		waits  bool
	}{
		{"unsigned", nil, hmacKey, false},
		{"another key", sign.NewHMAC([]byte("not the job's key")), hmacKey, false},
		{"the job's key", hmacKey, hmacKey, true},
		{"ed25519: unsigned", nil, edReader, false},
		{"ed25519: another key", edOther, edReader, false},
		{"ed25519: a verify-only holder", edReader, edReader, false},
		{"ed25519: the writer's key, waiter holds the public key", edWriter, edReader, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := memblob.New(memblob.Options{})
			ctx := context.Background()
			// The holder: a live flight that claims the entry and keeps
			// its lease beating, and never publishes.
			holder := newFlight(t, st, nil, func(o *Options) { o.SigningKey = tc.holder; o.NoProbe = true })
			release, err := holder.Acquire(ctx, entry, notReady)
			if err != nil || release == nil {
				t.Fatalf("holder: release %v, err %v", release != nil, err)
			}
			defer release()

			var logs logtest.Buffer
			const wait = 3 * time.Second
			w := newFlight(t, st, &logs, func(o *Options) { o.SigningKey = tc.key; o.NoProbe = true; o.Wait = wait })
			start := time.Now()
			r, err := w.Acquire(ctx, entry, notReady)
			took := time.Since(start)
			if err != nil || r == nil {
				t.Fatalf("waiter: release %v, err %v (want a no-op release: compile here)", r != nil, err)
			}
			r()
			gaveUp := strings.Contains(logs.String(), "waited too long")
			forged := strings.Contains(logs.String(), "not signed with this job's key")
			if tc.waits {
				if !gaveUp || forged {
					t.Fatalf("a lease signed with the job's key was not waited for (took %v): %s", took, logs.String())
				}
				return
			}
			if gaveUp || !forged {
				t.Fatalf("a forged lease made the waiter wait %v (bound %v): %s", took, wait, logs.String())
			}
			if _, err := st.Get(ctx, LeaseName(entry)); err != nil {
				t.Fatalf("the forged lease was removed or damaged by a waiter: %v", err)
			}
		})
	}
}
