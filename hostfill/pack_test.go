package hostfill

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/sign"
)

func testMembers(t testing.TB, key []byte) []Member {
	t.Helper()
	var ms []Member
	for _, f := range []struct{ name, data string }{
		{"xla_gpu_per_fusion_autotune_cache_dir/AAAA.textproto", "results { device: \"x\" }\n"},
		{"xla_gpu_per_fusion_autotune_cache_dir/BBBB.textproto", "results { device: \"y\" }\n"},
	} {
		m, err := seal(f.name, []byte(f.data), sign.NewHMAC(key), time.Unix(1, 0))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

func TestPackRoundTrip(t *testing.T) {
	key := []byte("k")
	ms := testMembers(t, key)
	pack, index, err := EncodePack(ms)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeIndex(index)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePack(pack)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || len(got) != 2 {
		t.Fatalf("records %d members %d", len(recs), len(got))
	}
	for i, m := range got {
		if m.Name != ms[i].Name || recs[i].Name != m.Name || recs[i].Digest != m.Digest || !bytes.Equal(m.Sealed, ms[i].Sealed) {
			t.Errorf("member %d: %+v", i, m.Record)
		}
		data, kind, err := unseal(m, sign.NewHMAC(key))
		if err != nil || kind != fileAutotune || sha256.Sum256(data) != m.Digest {
			t.Errorf("unseal %d: kind %v err %v", i, kind, err)
		}
		if _, _, err := unseal(m, sign.NewHMAC([]byte("other key"))); err == nil {
			t.Errorf("member %d opened with the wrong key", i)
		}
	}
	// An index is not a pack and a pack is not an index.
	if _, err := decodePack(index); !errors.Is(err, errBadPack) {
		t.Errorf("index decoded as a pack: %v", err)
	}
	if _, err := DecodeIndex(pack); !errors.Is(err, errBadPack) {
		t.Errorf("pack decoded as an index: %v", err)
	}
	// Every single-byte change and every truncation is refused.
	for i := range pack {
		b := bytes.Clone(pack)
		b[i] ^= 0x40
		if _, err := decodePack(b); err == nil {
			t.Fatalf("byte %d changed: accepted", i)
		}
		if _, err := decodePack(pack[:i]); err == nil {
			t.Fatalf("truncated to %d: accepted", i)
		}
	}
	// A different version is refused, not misread.
	b := bytes.Clone(index)
	b[4] = packVersion + 1
	if _, err := DecodeIndex(b); !errors.Is(err, errBadPack) {
		t.Errorf("version %d: %v", b[4], err)
	}
}

func TestEncodePackRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "../x", "/abs", "a//b", "a/./b"} {
		if _, _, err := EncodePack([]Member{{Record: Record{Name: name}, Sealed: []byte("x")}}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

// FuzzDecodePack checks that no input makes the decoders panic, allocate
// without bound or return members that do not fit the object; and that
// what decodes re-encodes to the same bytes.
func FuzzDecodePack(f *testing.F) {
	ms := testMembers(f, nil)
	pack, index, err := EncodePack(ms)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pack)
	f.Add(index)
	f.Add([]byte("XLCP"))
	tpack, tindex, err := EncodeTaggedPack(testOrigin("0.12.0.1"), ms)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tpack)
	f.Add(tindex)
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, recs, err := DecodeIndexOrigin(b); err == nil {
			for _, r := range recs {
				if validName(r.Name) != nil {
					t.Fatalf("invalid name %q accepted", r.Name)
				}
			}
			if err := o.Validate(); err != nil {
				t.Fatalf("decoded origin does not validate: %v", err)
			}
		}
		h, members, err := decodePackHead(b)
		if err != nil {
			return
		}
		total := 0
		for _, m := range members {
			total += len(m.Sealed)
			if uint64(len(m.Sealed)) != m.SealedSize {
				t.Fatalf("member %s: %d bytes, record says %d", m.Name, len(m.Sealed), m.SealedSize)
			}
		}
		if total > len(b) {
			t.Fatalf("members hold %d bytes of a %d-byte pack", total, len(b))
		}
		again, _, err := encodePack(h.meta, members)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs (err %v)", err)
		}
	})
}
