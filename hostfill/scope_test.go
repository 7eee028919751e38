package hostfill

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

func testOrigin(jaxlib string) Origin {
	return Origin{
		Runtime: Runtime{JAXLib: jaxlib, Platforms: "cpu"},
		Host:    "host-" + jaxlib,
		Settings: map[string]string{
			"env:XLA_FLAGS":                 "--xla_gpu_autotune_level=4 --xla_foo=1",
			"opt:xla_gpu_kernel_cache_file": "/tmp/xlacache-1/jax-0123/xla_gpu_kernel_cache_file",
		},
	}
}

func TestOriginRoundTrip(t *testing.T) {
	for _, o := range []Origin{
		testOrigin("0.12.0.1"),
		{Runtime: Runtime{Tag: "tpu-v6e-8x8"}},
		{Runtime: Runtime{Plugin: "sha256:0123456789abcdef"}, Settings: map[string]string{"env:JAX_PLATFORMS": "cpu"}},
		{Host: "h"},
	} {
		b, err := o.encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeOrigin(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		again, _ := got.encode()
		if !bytes.Equal(again, b) || got.Runtime != o.Runtime || got.Host != o.Host || len(got.Settings) != len(o.Settings) {
			t.Errorf("%+v came back as %+v", o, got)
		}
	}
	if b, err := (Origin{}).encode(); err != nil || b != nil {
		t.Errorf("empty origin encodes as %q, %v", b, err)
	}
}

func TestOriginRefused(t *testing.T) {
	for _, o := range []Origin{
		{Host: "a\nb"},
		{Settings: map[string]string{"env:X": "a\x00b"}},
		{Settings: map[string]string{"bad name": "x"}},
		{Settings: map[string]string{"env:X": strings.Repeat("x", maxOrigin)}},
		{Runtime: Runtime{JAXLib: "\xff"}},
		{Runtime: Runtime{Tag: "v6e\x1b[31m"}}, // a terminal escape
		{Host: "a\tb"},
		{Host: "a\u0085b"}, // a C1 control
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v validated", o)
		}
	}
	for _, b := range []string{
		"",                           // no line
		"host=a",                     // no final newline
		"runtime.jaxlib=1\nhost=a\n", // out of order
		"host=a\nhost=b\n",           // twice
		"host=\n",                    // empty value
		"noequals\n",                 // no "="
		"bad key=1\n",                // bad key
		"host=a\x00\n",               // NUL
		"host=\xff\n",                // not UTF-8
		"host=a\n\n",                 // empty line
		"future.key=1\nhost=a\nx=\n", // empty value after unknown key
	} {
		if _, err := decodeOrigin([]byte(b)); err == nil {
			t.Errorf("%q decoded", b)
		}
	}
	// Unknown keys are kept in the head and ignored.
	if o, err := decodeOrigin([]byte("future.key=1\nhost=a\n")); err != nil || o.Host != "a" {
		t.Errorf("unknown key: %+v, %v", o, err)
	}
}

func TestRuntimeConflicts(t *testing.T) {
	for _, c := range []struct {
		host, pack Runtime
		want       string
	}{
		{Runtime{JAXLib: "0.12.0.1"}, Runtime{JAXLib: "0.11.2"}, "jaxlib 0.11.2 vs 0.12.0.1"},
		{Runtime{JAXLib: "0.12.0.1"}, Runtime{JAXLib: "0.12.0.1"}, ""},
		{Runtime{}, Runtime{JAXLib: "0.11.2"}, ""},   // the host does not know its own
		{Runtime{JAXLib: "0.12.0.1"}, Runtime{}, ""}, // an untagged pack
		{Runtime{JAXLib: "1", Tag: "v6e"}, Runtime{Tag: "v7"}, "XLACACHE_RUNTIME_TAG v7 vs v6e"},
		{Runtime{Platforms: "cpu", Plugin: "sha256:aa"}, Runtime{Platforms: "tpu", Plugin: "sha256:bb"}, "JAX_PLATFORMS tpu vs cpu; XLA plugin sha256:bb vs sha256:aa"},
	} {
		var got []string
		for _, d := range c.host.Conflicts(c.pack) {
			got = append(got, d.String())
		}
		if s := strings.Join(got, "; "); s != c.want {
			t.Errorf("host %v, pack %v: %q, want %q", c.host, c.pack, s, c.want)
		}
	}
}

func TestTaggedPackRoundTrip(t *testing.T) {
	ms := testMembers(t, nil)
	o := testOrigin("0.12.0.1")
	pack, index, err := EncodeTaggedPack(o, ms)
	if err != nil {
		t.Fatal(err)
	}
	if pack[4] != packVersion {
		t.Errorf("tagged pack of version %d", pack[4])
	}
	got, recs, err := DecodeIndexOrigin(index)
	if err != nil || len(recs) != 2 || got.Runtime != o.Runtime || got.Settings["env:XLA_FLAGS"] != o.Settings["env:XLA_FLAGS"] {
		t.Fatalf("index: %+v %d records, %v", got, len(recs), err)
	}
	h, members, err := decodePackHead(pack)
	if err != nil || len(members) != 2 || h.origin.Host != o.Host {
		t.Fatalf("pack: %+v, %v", h.origin, err)
	}
	// An untagged pack stays version 1, readable by releases before
	// origins.
	plain, _, err := EncodeTaggedPack(Origin{}, ms)
	if err != nil || plain[4] != packVersionPlain {
		t.Fatalf("untagged pack: version %d, %v", plain[4], err)
	}
	// A version 2 head with an empty origin is refused: one encoding per
	// head.
	b := bytes.Clone(plain[:len(plain)-crcSize])
	b[4] = packVersion
	b = append(b[:fixedSize], append([]byte{0, 0, 0, 0}, b[fixedSize:]...)...)
	if _, err := decodePack(withCRC(b)); err == nil {
		t.Error("version 2 with an empty origin accepted")
	}
	// Every single-byte change of a tagged index is refused or changes
	// what it says (the CRC catches it).
	for i := range index {
		c := bytes.Clone(index)
		c[i] ^= 0x20
		if _, _, err := DecodeIndexOrigin(c); err == nil {
			t.Fatalf("byte %d changed: accepted", i)
		}
	}
}

func withCRC(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// publishRuntime publishes, from a host of origin o, n JAX entries of
// about size bytes (named for tag) to store, in packs of n/2 files.
func publishRuntime(t testing.TB, store blob.Store, o Origin, tag string, n int, size int) map[string][]byte {
	t.Helper()
	src := newHost(t, nil)
	src.o.Kernels = false
	src.o.Origin = o
	files := map[string][]byte{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("jit_%s_%d-%064x-cache", tag, i, i+1)] = jaxEntry(t, jaxcache.CodecZstd, 2, bytes.Repeat([]byte(tag+fmt.Sprint(i)), size/8))
	}
	for rel, data := range files {
		src.write(t, rel, data)
	}
	src.o.PackFiles = max(1, n/2)
	if err := newPublisher(store, src.o, nil).Publish(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	return files
}

// TestFillScopedToRuntime: on versitygw, one bucket holds the packs of
// hosts of two jaxlib releases and an untagged one; a host fills what its
// runtime can use and the untagged pack, skips the rest without a request
// for it and says what it skipped; a host that does not know its runtime
// fills everything, as before packs had one.
func TestFillScopedToRuntime(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	srv.Setenv(t)
	raw, err := xlacache.OpenShared(srv.SharedURL("bkt", "scope"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	old := publishRuntime(t, raw, testOrigin("0.11.2"), "old", 6, 4096)
	cur := publishRuntime(t, raw, testOrigin("0.12.0.1"), "cur", 4, 4096)
	untagged := publishRuntime(t, raw, Origin{}, "untagged", 2, 4096)

	store := &countingStore{Store: raw}
	b := newHost(t, nil)
	b.o.Kernels = false
	b.o.Origin = Origin{Runtime: Runtime{JAXLib: "0.12.0.1", Platforms: "cpu"}}
	st, err := fill(ctx, store, b.o)
	if err != nil {
		t.Fatal(err)
	}
	for rel := range cur {
		if _, ok := b.read(t, rel); !ok {
			t.Errorf("%s (this runtime) not filled", rel)
		}
	}
	for rel := range untagged {
		if _, ok := b.read(t, rel); !ok {
			t.Errorf("%s (untagged) not filled", rel)
		}
	}
	for rel := range old {
		if _, ok := b.read(t, rel); ok {
			t.Errorf("%s (jaxlib 0.11.2) filled", rel)
		}
	}
	packs, files, bytes := st.SkippedPacks()
	if len(st.Skipped) != 1 || packs != 2 || files != len(old) || bytes <= 0 || st.Untagged != 2 {
		t.Fatalf("skipped %+v (untagged %d)", st.Skipped, st.Untagged)
	}
	if why := st.Skipped[0].Why; len(why) != 1 || why[0].String() != "jaxlib 0.11.2 vs 0.12.0.1" {
		t.Errorf("why %v", why)
	}
	if st.PacksFetched != 2+2 {
		t.Errorf("fetched %d packs, want 4 (2 of this runtime, 2 untagged)", st.PacksFetched)
	}
	// The skipped names are not taken as published: this host publishes
	// its own copies of names the other runtime's packs hold.
	for rel := range old {
		if st.Remote[rel] {
			t.Errorf("%s of a skipped pack counted as published", rel)
		}
	}

	// A host that does not know its runtime fills everything.
	c := newHost(t, nil)
	c.o.Kernels = false
	st, err = fill(ctx, store, c.o)
	if err != nil || len(st.Skipped) != 0 || st.Files != len(old)+len(cur)+len(untagged) {
		t.Fatalf("unknown runtime: %d files, skipped %+v, %v", st.Files, st.Skipped, err)
	}

	// The host's kept index copies say where every name came from,
	// skipped packs included.
	origins, err := ReadOrigins(ctx, b.o.Root)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Origin{}
	for _, po := range origins {
		for _, n := range po.Names {
			byName[n] = po.Origin
		}
	}
	for rel := range old {
		if byName[rel].Runtime.JAXLib != "0.11.2" || byName[rel].Settings["env:XLA_FLAGS"] == "" {
			t.Errorf("%s: origin %+v", rel, byName[rel])
		}
	}
}

// TestSignedOriginBound: with a signing key, an index whose origin was
// changed (to pass for this host's runtime) is refused, and a pack whose
// head differs from its signed index installs nothing.
func TestSignedOriginBound(t *testing.T) {
	ctx := context.Background()
	key := []byte("signing key")
	raw := memblob.New(memblob.Options{})
	a := newHost(t, key)
	a.o.Kernels = false
	a.o.Origin = testOrigin("0.11.2")
	a.write(t, "jit_f-"+strings.Repeat("a", 64)+"-cache", jaxEntry(t, jaxcache.CodecZstd, 2, []byte("exe")))
	if err := newPublisher(raw, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	objs, err := raw.List(ctx, Prefix)
	if err != nil || len(objs) != 2 {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	for _, obj := range objs {
		if !strings.HasSuffix(obj.Name, indexSuffix) {
			continue
		}
		b, err := raw.Get(ctx, obj.Name)
		if err != nil {
			t.Fatal(err)
		}
		forged := bytes.Replace(b, []byte("0.11.2"), []byte("0.12.1"), 1)
		if bytes.Equal(forged, b) {
			t.Fatal("origin not found in the sealed index")
		}
		if err := raw.Delete(ctx, obj.Name); err != nil {
			t.Fatal(err)
		}
		if err := raw.PutIfAbsent(ctx, obj.Name, forged); err != nil {
			t.Fatal(err)
		}
	}
	h := newHost(t, key)
	h.o.Kernels = false
	h.o.Origin = Origin{Runtime: Runtime{JAXLib: "0.12.1"}}
	st, err := fill(ctx, raw, h.o)
	if err != nil || st.Refused == 0 || st.Files != 0 {
		t.Fatalf("forged origin: %d files, %d refused, %v", st.Files, st.Refused, err)
	}
}

// TestLocalOrigin: the host's own origin is recorded and read back.
func TestLocalOrigin(t *testing.T) {
	h := newHost(t, nil)
	if _, ok, err := LocalOrigin(h.o.Root); ok || err != nil {
		t.Fatalf("before: %v %v", ok, err)
	}
	for _, jl := range []string{"0.4.36", "0.12.0.1"} {
		if err := SaveLocalOrigin(h.o, testOrigin(jl)); err != nil {
			t.Fatal(err)
		}
		o, ok, err := LocalOrigin(h.o.Root)
		if !ok || err != nil || o.Runtime.JAXLib != jl {
			t.Fatalf("after: %+v %v %v", o, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.path, filepath.FromSlash(localOriginRel))); err != nil {
		t.Fatal(err)
	}
}
