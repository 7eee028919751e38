package cache

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/xlacache/xlacache/internal/entry"
)

// benchPayload is a payload of n bytes that compresses about 2:1, like
// machine code with tables.
func benchPayload(n int) []byte {
	p := make([]byte, n)
	rand.Read(p[:len(p)/2])
	return p
}

var benchSizes = []int{4 << 10, 1 << 20}

// BenchmarkGet measures a verified cache hit (open, read, checksum,
// decompress); compare with BenchmarkReadDecompress, the floor.
func BenchmarkGet(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			c := mustOpen(b, testOptions(b.TempDir()), nil)
			tier := c.Tier(ExecutablesTier)
			k := NewKey("bench", []KeyPart{{"p", []byte("x")}})
			payload := benchPayload(n)
			if err := tier.Put(context.Background(), k, payload, time.Second); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, ok := tier.Get(context.Background(), k); !ok {
					b.Fatal("miss")
				}
			}
		})
	}
}

// BenchmarkReadDecompress reads and zstd-decompresses the same payloads
// directly, with no header, checksum or bookkeeping.
func BenchmarkReadDecompress(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			payload := benchPayload(n)
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false))
			z := enc.EncodeAll(payload, nil)
			p := filepath.Join(b.TempDir(), "raw.zst")
			if err := os.WriteFile(p, z, 0o600); err != nil {
				b.Fatal(err)
			}
			dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				data, err := os.ReadFile(p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := dec.DecodeAll(data, make([]byte, 0, len(payload))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutGetScale measures one put of a new entry plus one get of an
// existing entry in a cache already holding n entries, with a size bound
// that keeps trimming: the cost must not grow with n.
func BenchmarkPutGetScale(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			o := testOptions(dir)
			c := mustOpen(b, o, nil)
			tier := c.Tier(ExecutablesTier)
			ctx := context.Background()
			payload := make([]byte, 512)
			rand.Read(payload)
			keys := make([]Key, n)
			for i := range keys {
				keys[i] = NewKey("scale", []KeyPart{{"i", []byte(fmt.Sprint(i))}})
				if err := tier.Put(ctx, keys[i], payload, time.Second); err != nil {
					b.Fatal(err)
				}
			}
			c.waitBackground()
			c.Close()
			u, err := Scan(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			// A bound just above the current size: puts keep crossing it.
			o.MaxSize = u.Bytes + u.Bytes/50
			c = mustOpen(b, o, nil)
			c.waitBackground()
			tier = c.Tier(ExecutablesTier)
			b.ResetTimer()
			prev := keys[n-1]
			for i := 0; i < b.N; i++ {
				k := NewKey("scale", []KeyPart{{"new", []byte(fmt.Sprint(i))}})
				if err := tier.Put(ctx, k, payload, time.Second); err != nil {
					b.Fatal(err)
				}
				// The previous put's entry: always a hit, whatever the
				// trims evicted, so both sizes do the same work.
				if _, ok := tier.Get(ctx, prev); !ok && i > 0 {
					b.Fatalf("entry %s put just before is missing", prev)
				}
				prev = k
			}
			b.StopTimer()
			c.waitBackground()
		})
	}
}

const keyBenchSize = 100 << 20

func keyBenchFile(b *testing.B) (string, []byte) {
	data := make([]byte, keyBenchSize)
	rand.Read(data)
	p := filepath.Join(b.TempDir(), "program.mlir")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return p, data
}

// BenchmarkKeyDerivation100MB derives a key whose program part is a 100 MB
// file read from disk; compare with BenchmarkSha256sum100MB.
func BenchmarkKeyDerivation100MB(b *testing.B) {
	p, _ := keyBenchFile(b)
	b.SetBytes(keyBenchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		NewKey("big", []KeyPart{{"program", data}, {"options", []byte("o")}, {"backend", []byte("cpu")}})
	}
}

// BenchmarkSha256sum100MB runs the sha256sum tool on the same file size.
func BenchmarkSha256sum100MB(b *testing.B) {
	if _, err := exec.LookPath("sha256sum"); err != nil {
		b.Skip("sha256sum not installed")
	}
	p, _ := keyBenchFile(b)
	b.SetBytes(keyBenchSize)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out, err := exec.Command("sha256sum", p).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkEncodeDecode1MiB measures the entry codec alone.
func BenchmarkEncodeDecode1MiB(b *testing.B) {
	payload := benchPayload(1 << 20)
	h := entry.Header{Key: NewKey("b", nil).String()}
	b.SetBytes(int64(len(payload)))
	for i := 0; i < b.N; i++ {
		data, err := entry.Encode(h, payload, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := entry.Decode(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseKey: ParseKey never panics, and an accepted key is a plain file
// name that round-trips.
func FuzzParseKey(f *testing.F) {
	f.Add(NewKey("jit_f", nil).String())
	f.Add("../x-" + NewKey("", nil).String()[7:])
	f.Add("a-b-c")
	f.Fuzz(func(t *testing.T, s string) {
		m, d, err := ParseKey(s)
		if err != nil {
			return
		}
		k := Key{Module: m, Digest: d}
		if k.String() != s || filepath.Base(s) != s || s == "." || s == ".." || s[0] == '.' {
			t.Fatalf("ParseKey accepted %q", s)
		}
	})
}
