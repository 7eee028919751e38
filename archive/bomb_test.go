package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
)

// bombArchive returns a small archive whose members are given by ms; a
// member with zeros > 0 declares that many bytes of zeros but only
// written of them are actually in the stream (a truncated archive: a bomb
// need not be complete to do its harm).
type bombMember struct {
	name    string
	data    []byte
	zeros   int64 // declared size of zeros (data ignored)
	written int64 // zeros actually written
}

func bombArchive(t testing.TB, ms []bombMember) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	zero := make([]byte, 1<<20)
	for _, m := range ms {
		size := int64(len(m.data))
		if m.zeros > 0 {
			size = m.zeros
		}
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Typeflag: tar.TypeReg, Mode: 0o600, Size: size, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if m.zeros == 0 {
			tw.Write(m.data)
			continue
		}
		for w := int64(0); w < m.written; w += int64(len(zero)) {
			if _, err := tw.Write(zero[:min(int64(len(zero)), m.written-w)]); err != nil {
				t.Fatal(err)
			}
		}
		break // the rest of the member never comes
	}
	tw.Flush()
	zw.Close()
	return buf.Bytes()
}

// Item 7 of the hardening issue: members are streamed, bounded by size and
// by expansion, and a compression bomb is refused quickly, with the member
// named and without allocating anything like its size.
func TestImportRefusesCompressionBombs(t *testing.T) {
	// A real entry, to make an entry-shaped bomb from.
	src := t.TempDir()
	cachetest.Populate(t, src, nil)
	ents, err := cache.List(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	var goodName string
	var goodData []byte
	for _, e := range ents {
		if e.Tier == cache.ExecutablesTier {
			goodData, _ = os.ReadFile(e.Path)
			rel, _ := filepath.Rel(src, e.Path)
			goodName = filepath.ToSlash(rel)
		}
	}
	if goodData == nil {
		t.Fatal("no entry to start from")
	}
	// An entry whose zstd payload declares 3 GiB (a few KiB of zstd frame).
	class := layout.Classify(goodName)
	h, _, err := entry.ParseHeader(goodData)
	if err != nil {
		t.Fatal(err)
	}
	innerBomb, err := entry.Encode(entry.Header{Key: class.Key, Parts: h.Parts}, bytes.Repeat([]byte{0}, 100<<20), nil)
	if err != nil {
		t.Fatal(err)
	}

	autotune := layout.XLAAutotuneDir + "/a.textproto"
	manifestFor := func(names ...string) bombMember {
		raw := map[string]string{}
		for _, n := range names {
			raw[n] = strings.Repeat("0", 64)
		}
		b, _ := json.Marshal(manifest{Version: 1, Raw: raw})
		return bombMember{name: ManifestName, data: b}
	}
	tests := []struct {
		name    string
		ms      []bombMember
		o       Options
		member  string // named in the error or the refusal
		refused bool   // refused (and the import goes on) rather than stopped
	}{
		// The field report: a 107 KiB archive whose raw member (listed in
		// an unsigned manifest) expands to 4 GiB of zeros.
		{"raw file bomb", []bombMember{manifestFor(autotune), {name: autotune, zeros: 4 << 30, written: 256 << 20}}, Options{}, autotune, false},
		// The same bytes where an entry belongs.
		{"entry-shaped bomb", []bombMember{{name: goodName, zeros: 4 << 30, written: 256 << 20}}, Options{}, goodName, false},
		// A member declaring more than the member bound.
		{"oversized member", []bombMember{{name: goodName, zeros: 5 << 30, written: 256 << 20}}, Options{}, goodName, false},
		// An entry whose own payload decompresses 100 MiB from a few KiB.
		{"entry payload bomb", []bombMember{{name: goodName, data: innerBomb}}, Options{}, goodName, true},
		// Members adding up to more than the import bound.
		{"import bound", []bombMember{{name: goodName, data: goodData}, {name: autotune, data: []byte("x")}}, Options{MaxImportSize: int64(len(goodData))}, autotune, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			archive := bombArchive(t, tt.ms)
			if len(archive) > 1<<20 {
				t.Fatalf("test archive of %d bytes is not small", len(archive))
			}
			parent := t.TempDir()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			st, err := Import(context.Background(), bytes.NewReader(archive), filepath.Join(parent, "cache"), tt.o)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d-byte archive: %v, %+v in %v, %d MiB allocated", len(archive), err, st, took.Round(time.Millisecond), alloc>>20)
			if tt.refused {
				if err != nil || len(st.Refused) != 1 || !strings.Contains(st.Refused[0], tt.member) || !strings.Contains(st.Refused[0], "bomb") {
					t.Errorf("want the member refused as a bomb: %+v %v", st, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.member) {
				t.Errorf("want an error naming %q, got %v (%+v)", tt.member, err, st)
			}
			// Streaming costs buffers, not the member's size.
			if alloc > 48<<20 {
				t.Errorf("import allocated %d MiB", alloc>>20)
			}
			if took > 20*time.Second {
				t.Errorf("refusing took %v", took)
			}
			for _, f := range filesUnder(parent) {
				if rel, _ := filepath.Rel(parent, f); !strings.HasSuffix(rel, filepath.FromSlash(goodName)) || tt.name != "import bound" {
					t.Errorf("left behind: %s", rel)
				}
			}
		})
	}
}

// Streaming changes nothing for a good archive: every kind of member is
// installed, byte for byte.
func TestImportStreamsGoodMembers(t *testing.T) {
	src := t.TempDir()
	cachetest.Populate(t, src, nil)
	var buf bytes.Buffer
	if _, err := Export(context.Background(), src, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	st, err := Import(context.Background(), bytes.NewReader(buf.Bytes()), dst, Options{})
	if err != nil || len(st.Refused) != 0 || st.Files == 0 {
		t.Fatalf("%+v %v", st, err)
	}
	n := 0
	for _, f := range filesUnder(src) {
		rel, _ := filepath.Rel(src, f)
		if c := layout.Classify(filepath.ToSlash(rel)); c.Kind != layout.Entry && c.Kind != layout.XLAAutotune && c.Kind != layout.XLAKernel {
			continue
		}
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: imported %d bytes (%v), want %d", rel, len(got), err, len(want))
		}
		n++
	}
	if n != st.Files {
		t.Errorf("%d files compared, %d imported", n, st.Files)
	}
	// Importing again skips every member, checked.
	st, err = Import(context.Background(), bytes.NewReader(buf.Bytes()), dst, Options{})
	if err != nil || st.Files != 0 || st.Skipped != n || len(st.Refused) != 0 {
		t.Errorf("second import: %+v %v", st, err)
	}
}

// The streaming entry check agrees with entry.DecodeAs on every
// single-byte corruption and truncation of signed and unsigned entries,
// whatever the write sizes.
func TestEntryCheckMatchesDecode(t *testing.T) {
	payload := bytes.Repeat([]byte("compressible payload "), 500)
	const key = "m-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	edPriv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	edWriter, _ := sign.NewEd25519(edPriv)
	edReader, _ := sign.NewEd25519(nil, edPriv.Public().(ed25519.PublicKey))
	otherReader, _ := sign.NewEd25519(nil, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	for _, keys := range []struct{ writer, reader *sign.Keys }{
		{nil, nil},
		{sign.NewHMAC([]byte("k")), sign.NewHMAC([]byte("k"))},
		{edWriter, edReader},
		{edWriter, otherReader}, // refused whole and streamed alike
		{edWriter, sign.NewHMAC([]byte("k"))},
	} {
		signKey := keys.reader
		good, err := entry.Encode(entry.Header{Key: key}, payload, keys.writer)
		if err != nil {
			t.Fatal(err)
		}
		stream := func(b []byte, chunk int) error {
			c, err := newEntryCheck(key, signKey, int64(len(b)))
			if err != nil {
				return err
			}
			defer c.abort()
			for len(b) > 0 {
				k := min(chunk, len(b))
				if _, err := c.Write(b[:k]); err != nil {
					return err
				}
				b = b[k:]
			}
			return c.finish()
		}
		for i := 0; i <= len(good); i += 1 + i/50 {
			for _, chunk := range []int{1, 7, 4096} {
				bad := bytes.Clone(good)
				if i < len(good) {
					bad[i] ^= 0x40
				} else {
					bad = bad[:len(bad)-1]
				}
				_, derr := entry.DecodeAs(bad, key, signKey)
				serr := stream(bad, chunk)
				if (derr == nil) != (serr == nil) {
					t.Fatalf("keys %v, byte %d, chunk %d: DecodeAs %v, stream %v", signKey, i, chunk, derr, serr)
				}
			}
		}
		_, derr := entry.DecodeAs(good, key, signKey)
		if serr := stream(good, 3); (derr == nil) != (serr == nil) {
			t.Errorf("keys %v: good entry: DecodeAs %v, stream %v", signKey, derr, serr)
		}
	}
}

// Every payload size from 0 to 4 KiB passes the streaming check: the
// decoder's memory cap follows the declared size, but a zstd frame's
// window is at least 1 KiB whatever the content, so a cap of size+1 alone
// refused every small compressed entry (a cpu autotune entry is a few
// hundred bytes) as "window size exceeded".
func TestEntryCheckAcceptsSmallPayloads(t *testing.T) {
	const key = "m-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	pattern := []byte("tile=8 unroll=4 order=ikj; ")
	compressed := 0
	for size := 0; size <= 4096; size++ {
		payload := bytes.Repeat(pattern, size/len(pattern)+1)[:size]
		for _, signKey := range [][]byte{nil, []byte("k")} {
			b, err := entry.Encode(entry.Header{Key: key}, payload, sign.NewHMAC(signKey))
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := entry.ParseHeader(b)
			if err == nil && h.Codec == entry.CodecZstd && signKey == nil {
				compressed++
			}
			c, err := newEntryCheck(key, sign.NewHMAC(signKey), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(b); err != nil {
				c.abort()
				t.Fatalf("size %d, key %q: write: %v", size, signKey, err)
			}
			if err := c.finish(); err != nil {
				t.Fatalf("size %d, key %q: refused: %v", size, signKey, err)
			}
		}
	}
	if compressed < 4000 {
		t.Fatalf("only %d of 4097 payloads were stored compressed: the test no longer covers small zstd frames", compressed)
	}
}
