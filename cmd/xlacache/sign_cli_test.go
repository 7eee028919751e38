package main

// Ed25519 signing end to end, with real processes (this test binary
// running main) and a real S3 server: a CI writer holding the private key
// and readers holding only the public key, two hosts (two directories)
// sharing one bucket.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// runProc runs `xlacache args...` as a process with env and returns its
// exit code, stdout and stderr.
func runProc(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if testing.Verbose() {
		t.Logf("xlacache %s -> %d\n%s%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// bucketSnapshot returns every object of store, by name.
func bucketSnapshot(t *testing.T, store blob.Store) map[string][]byte {
	t.Helper()
	infos, err := store.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string][]byte{}
	for _, in := range infos {
		b, err := store.Get(context.Background(), in.Name)
		if err != nil {
			t.Fatal(err)
		}
		snap[in.Name] = b
	}
	return snap
}

// outputLines returns the "output" lines of `xlacache run`: the program's
// results.
func outputLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "output") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestEd25519WriterAndReaders: host A, a CI writer with the private key,
// compiles and publishes; host B, a reader with only the public key, is
// served from the bucket, compiles what it misses, and publishes nothing;
// objects tampered with, re-signed with another key or stripped of their
// signature are refused by host C (another reader), which compiles
// instead and leaves them exactly as they were.
func TestEd25519WriterAndReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles programs with cc")
	}
	srv := s3test.Start(t, "bkt")
	work := t.TempDir()
	hostA, hostB, hostC := filepath.Join(work, "a"), filepath.Join(work, "b"), filepath.Join(work, "c")
	// The cnn example: its convolutions are tuned, so every tier has
	// entries (the products of the MLP one run on the gemm routine).
	cnn, err := filepath.Abs("../../examples/cnn/cnn.mlir")
	if err != nil {
		t.Fatal(err)
	}
	embedding, _ := filepath.Abs("../../examples/embedding/embedding.mlir")

	// The key pair, made by keygen.
	privFile := filepath.Join(work, "ci-signing.pem")
	code, out, errOut := runProc(t, execEnv(nil, hostA), "keygen", "--json", "-o", privFile)
	if code != 0 {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, errOut)
	}
	var kg keygenReport
	if err := json.Unmarshal([]byte(out), &kg); err != nil || kg.PublicKey == "" || kg.KeyID == "" {
		t.Fatalf("keygen output %q: %v", out, err)
	}
	if st, err := os.Stat(privFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key file: %v %v", st, err)
	}
	if code, _, _ := runProc(t, execEnv(nil, hostA), "keygen", "-o", privFile); code == 0 {
		t.Fatal("keygen replaced an existing private key file")
	}
	writer := execEnv(srv, hostA, "XLACACHE_SIGNING_PRIVATE_KEY_FILE="+privFile, "XLACACHE_ROLE=writer")
	reader := func(dir string) []string {
		// XLACACHE_ROLE=writer too: the keys, not the role, decide.
		return execEnv(srv, dir, "XLACACHE_VERIFY_KEYS="+kg.PublicKey, "XLACACHE_ROLE=writer")
	}

	// Host A publishes.
	code, outA, errOut := runProc(t, writer, "run", cnn)
	if code != 0 || !strings.Contains(outA, "executable miss: compiled") {
		t.Fatalf("host A: exit %d\n%s%s", code, outA, errOut)
	}
	srv.Setenv(t)
	store, err := xlacache.OpenShared(srv.SharedURL("bkt", "job"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	published := bucketSnapshot(t, store)
	var entryObjs []string
	for name := range published {
		if _, _, ok := layout.ParseEntryObject(name); ok {
			entryObjs = append(entryObjs, name)
		}
	}
	if len(entryObjs) < 3 {
		t.Fatalf("host A published %d entries: %v", len(entryObjs), slicesOf(published))
	}
	// Every published entry is Ed25519-signed by the CI key.
	pub, _ := sign.ParsePublicKey(kg.PublicKey)
	readerKeys, _ := sign.NewEd25519(nil, pub)
	for _, name := range entryObjs {
		e, err := entry.Decode(published[name], readerKeys)
		if err != nil || !e.HasSigner || e.Signer.String() != kg.KeyID {
			t.Fatalf("%s: %v (signer %v)", name, err, e)
		}
	}

	// Host B, a reader: served from the bucket, publishes nothing, even
	// for a program nobody published.
	code, outB, errOut := runProc(t, reader(hostB), "run", cnn)
	if code != 0 || !strings.Contains(outB, "executable hit") || outputLines(outB) != outputLines(outA) || !strings.Contains(errOut, cache.VerifyOnlyLine) {
		t.Fatalf("host B: exit %d\n%s%s\nhost A printed:\n%s", code, outB, errOut, outA)
	}
	code, outB, errOut = runProc(t, reader(hostB), "run", embedding)
	if code != 0 || !strings.Contains(outB, "cannot sign") {
		t.Fatalf("host B, a program of its own: exit %d\n%s%s", code, outB, errOut)
	}
	if after := bucketSnapshot(t, store); !maps.EqualFunc(after, published, bytes.Equal) {
		t.Fatalf("a reader changed the bucket: %d objects before, %d after", len(published), len(after))
	}
	if entries, _ := filepath.Glob(filepath.Join(hostB, "*", "*")); len(entries) != 0 {
		t.Fatalf("a reader wrote its cache directory: %v", entries)
	}
	// verify, with the public key only, names the signer.
	code, out, errOut = runProc(t, reader(hostA), "verify", "--dir", hostA)
	if code != 0 || !strings.Contains(out, "signed by key id "+kg.KeyID) || !strings.Contains(out, "verify-only") {
		t.Fatalf("verify with the public key: exit %d\n%s%s", code, out, errOut)
	}

	// Tamper with the bucket: the executable re-signed by an attacker's
	// key (same payload: only the signature tells), a kernel stripped of
	// its signature, an autotune result with a flipped byte.
	attacker, _ := sign.NewEd25519(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	tampered := map[string]bool{}
	for _, name := range entryObjs {
		tier, _, _ := layout.ParseEntryObject(name)
		if tampered[tier] {
			continue
		}
		tampered[tier] = true
		data := bytes.Clone(published[name])
		e, err := entry.Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(tier, "executables"):
			data, err = entry.Encode(e.Header, e.Payload, attacker)
		case strings.HasSuffix(tier, "kernels"):
			data, err = entry.Encode(e.Header, e.Payload, nil)
		default:
			data[len(data)/2] ^= 0x40
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := store.Stat(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.ReplaceIfMatch(context.Background(), name, info.ETag, data); err != nil {
			t.Fatal(err)
		}
	}
	if len(tampered) < 3 {
		t.Fatalf("tampered with %d tiers, want executables, autotune and kernels", len(tampered))
	}
	before := bucketSnapshot(t, store)

	// Host C, a reader: the forged executable is a miss, compiled here;
	// the result is right; the bucket is left exactly as it was.
	code, outC, errOut := runProc(t, reader(hostC), "run", cnn)
	if code != 0 || !strings.Contains(outC, "executable miss: compiled") || outputLines(outC) != outputLines(outA) {
		t.Fatalf("host C: exit %d\n%s%s", code, outC, errOut)
	}
	if after := bucketSnapshot(t, store); !maps.EqualFunc(after, before, bytes.Equal) {
		t.Fatal("a reader rewrote, repaired or removed objects it could not verify")
	}
}

func slicesOf(m map[string][]byte) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	return names
}

// TestExecEd25519: under `xlacache exec`, host A (the CI writer's private
// key) publishes its job's files while the job runs; host B, with only the
// public key, finds them all in its directory before its command starts
// (exec's fill of packs sealed with Ed25519); host C, holding another
// public key, gets none of them; neither reader changes the bucket.
func TestExecEd25519(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	work := t.TempDir()
	privFile := filepath.Join(work, "ci.pem")
	priv, err := sign.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := sign.WritePrivateKeyFile(privFile, priv); err != nil {
		t.Fatal(err)
	}
	pub := sign.EncodePublicKey(priv.Public().(ed25519.PublicKey))
	other, _ := sign.GenerateKey()
	otherPub := sign.EncodePublicKey(other.Public().(ed25519.PublicKey))

	code, out := runXC(t, execEnv(srv, filepath.Join(work, "a"), "XLACACHE_SIGNING_PRIVATE_KEY_FILE="+privFile,
		"XLACACHE_PROCESS_INDEX=0", testProgEnv+"=write", testWaitPublishedEnv+"=1"))
	if code != 0 {
		t.Fatalf("host A: exit %d\n%s", code, out)
	}
	srv.Setenv(t)
	store, err := xlacache.OpenShared(srv.SharedURL("bkt", "job"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	published := bucketSnapshot(t, store)
	if len(published) == 0 {
		t.Fatal("host A published nothing")
	}
	// Host B checks every file byte for byte before its command starts
	// (the program exits 9 otherwise).
	code, out = runXC(t, execEnv(srv, filepath.Join(work, "b"), "XLACACHE_VERIFY_KEYS="+otherPub+","+pub,
		"XLACACHE_PROCESS_INDEX=0", testProgEnv+"=check"))
	if code != 0 {
		t.Fatalf("host B (public key): exit %d\n%s", code, out)
	}
	code, out = runXC(t, execEnv(srv, filepath.Join(work, "c"), "XLACACHE_VERIFY_KEYS="+otherPub,
		"XLACACHE_PROCESS_INDEX=0", testProgEnv+"=check"))
	if code != 9 || !strings.Contains(out, "signed with another key") {
		t.Fatalf("host C (another public key) got the files or failed otherwise: exit %d\n%s", code, out)
	}
	if after := bucketSnapshot(t, store); !maps.EqualFunc(after, published, bytes.Equal) {
		t.Fatalf("a verify-only host changed the bucket: %d objects before, %d after", len(published), len(after))
	}
}
