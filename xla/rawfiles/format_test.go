package rawfiles

import (
	"bytes"
	"errors"
	"io"
	"path"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xlacache/xlacache/internal/layout"
)

// field is one length-delimited protobuf field record.
func field(num protowire.Number, s string) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, []byte(s))
}

// refRecords is the reference the walker is checked against: protowire's
// own parser, with the walker's two extra rules (no groups, field numbers
// within the valid range).
func refRecords(b []byte) ([][]byte, error) {
	var recs [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if num > protowire.MaxValidNumber {
			return nil, errors.New("field number out of range")
		}
		if typ == protowire.StartGroupType || typ == protowire.EndGroupType {
			return nil, errors.New("group")
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		recs = append(recs, b[:n+m])
		b = b[n+m:]
	}
	return recs, nil
}

func TestAutotuneNames(t *testing.T) {
	for name, want := range map[string]bool{
		"QUJDRA==.textproto":                    true,
		"a-b_c+d=.textproto":                    true,
		"x.y.textproto":                         true,
		"":                                      false,
		".textproto":                            false,
		".tmp-123":                              false,
		layout.TempPrefix + "x":                 false,
		"x.textproto/":                          false,
		"../x.textproto":                        false,
		"tmp/x.textproto":                       false,
		"x.TEXTPROTO":                           false,
		"x .textproto":                          false,
		"x\n.textproto":                         false,
		"x.textproto\x00":                       false,
		"a..textproto":                          false,
		"a..b.textproto":                        false,
		"..textproto":                           false,
		".hidden.textproto":                     false,
		"a/b.textproto":                         false,
		"x.textproto.tmp":                       false,
		"x\x00.textproto":                       false,
		strings.Repeat("b", 201) + ".textproto": true,
		strings.Repeat("b", 202) + ".textproto": false,
		strings.Repeat("a", 300) + ".textproto": false,
	} {
		if got := ValidAutotuneName(name); got != want {
			t.Errorf("ValidAutotuneName(%q) = %v, want %v", name, got, want)
		}
	}
	// The store and the directory agree on where autotune files live.
	if c := layout.Classify(AutotuneDir + "/QUJD.textproto"); c.Kind != layout.XLAAutotune {
		t.Errorf("layout classifies an autotune file as %v", c.Kind)
	}
	if KernelFile != layout.XLAKernelFile || AutotuneDir != layout.XLAAutotuneDir {
		t.Error("subcache names differ from the layout's")
	}
}

// A name ValidAutotuneName accepts is a plain file name in XLA's autotune
// directory: no path, not hidden, not temporary, a text proto.
func FuzzValidAutotuneName(f *testing.F) {
	f.Add("QUJD.textproto")
	f.Add("../x.textproto")
	f.Fuzz(func(t *testing.T, name string) {
		if !ValidAutotuneName(name) {
			return
		}
		rel := AutotuneDir + "/" + name
		switch {
		case path.Base(name) != name, strings.ContainsAny(name, "/\\\x00"):
			t.Fatalf("%q is a path", name)
		case strings.HasPrefix(name, "."), layout.IsTemp(name):
			t.Fatalf("%q is hidden or temporary", name)
		case !strings.HasSuffix(name, ".textproto"), len(name) > 220:
			t.Fatalf("%q is not an autotune file name", name)
		case layout.ValidRel(rel) != nil:
			t.Fatalf("%q: %v", rel, layout.ValidRel(rel))
		case layout.Classify(rel).Kind != layout.XLAAutotune:
			t.Fatalf("layout classifies %q as %v", rel, layout.Classify(rel).Kind)
		}
	})
}

func TestVerifyAutotuneFile(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"text proto", []byte("version: 3\nresults { device: \"sm_90\" }\n"), true},
		{"empty", nil, false},
		{"binary", []byte{0xff, 0xfe, 0x00}, false},
		{"too large", bytes.Repeat([]byte("a"), MaxAutotuneFile+1), false},
		{"at the bound", bytes.Repeat([]byte("a"), MaxAutotuneFile), true},
	} {
		if err := VerifyAutotuneFile(tt.data); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestVerifyKernelFile(t *testing.T) {
	varint := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1<<40)
	fixed := protowire.AppendFixed64(protowire.AppendTag(nil, 3, protowire.Fixed64Type), 7)
	fixed32 := protowire.AppendFixed32(protowire.AppendTag(nil, 4, protowire.Fixed32Type), 7)
	good := bytes.Join([][]byte{field(1, "kernel-a"), varint, fixed, fixed32, field(1, "")}, nil)
	for _, tt := range []struct {
		name string
		data []byte
		want string // "" when valid
	}{
		{"empty file", nil, ""},
		{"every wire type", good, ""},
		{"truncated value", field(1, "kernel-a")[:5], "3 of 8 bytes present"},
		{"truncated length", []byte{0x0a}, "length"},
		{"truncated tag", []byte{0x80}, "bad field tag"},
		{"field number zero", []byte{0x02, 0x00}, "invalid field number 0"},
		{"field number too large", protowire.AppendTag(nil, protowire.MaxValidNumber+1, protowire.VarintType), "invalid field number"},
		{"group", protowire.AppendTag(nil, 1, protowire.StartGroupType), "wire type 3"},
		{"end group", protowire.AppendTag(nil, 1, protowire.EndGroupType), "wire type 4"},
		{"varint overflow", append([]byte{0x08}, bytes.Repeat([]byte{0xff}, 10)...), "overflows"},
		{"huge length", protowire.AppendVarint([]byte{0x0a}, 1<<62), "bytes present"},
		{"length past int64", protowire.AppendVarint([]byte{0x0a}, 1<<63+5), "too large"},
	} {
		err := VerifyKernelFile(bytes.NewReader(tt.data))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// The walker streams: a record far larger than its read buffer is skipped,
// not held, and its offsets come out right.
func TestWalkKernelCacheStreams(t *testing.T) {
	const big = 8 << 20
	head := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), big)
	tail := field(2, "end")
	r := io.MultiReader(bytes.NewReader(head), io.LimitReader(zeros{}, big), bytes.NewReader(tail))
	var got [][2]int64
	if err := walkKernelCache(r, func(off, n int64) error {
		got = append(got, [2]int64{off, n})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := [][2]int64{{0, int64(len(head)) + big}, {int64(len(head)) + big, int64(len(tail))}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("records %v, want %v", got, want)
	}
	stop := errors.New("stop")
	if err := walkKernelCache(bytes.NewReader(tail), func(int64, int64) error { return stop }); err != stop {
		t.Errorf("callback error not returned: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Merges refuse what verification refuses: one rule for the file.
func TestMergeKernelCachesUsesTheWalker(t *testing.T) {
	a := field(1, "a")
	group := protowire.AppendTag(nil, 1, protowire.StartGroupType)
	got, used, err := MergeKernelCaches(a, [][]byte{group, field(1, "b")})
	if err == nil || used[0] || !used[1] || !bytes.Equal(got, append(append([]byte(nil), a...), field(1, "b")...)) {
		t.Errorf("merge %x %v %v", got, used, err)
	}
	if VerifyKernelFile(bytes.NewReader(group)) == nil {
		t.Error("verification accepted a group")
	}
}

// The walker agrees with protowire's parser on every input: same verdict,
// same record boundaries; the records tile the input; an error says where.
func FuzzWalkKernelCache(f *testing.F) {
	f.Add(field(1, "kernel"))
	f.Add([]byte{0x0a, 0x80})
	f.Add(protowire.AppendTag(nil, 1, protowire.StartGroupType))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := refRecords(b)
		got, gerr := protoRecords(b)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("walker err %v, protowire err %v", gerr, werr)
		}
		if gerr != nil {
			if !strings.Contains(gerr.Error(), "offset") {
				t.Fatalf("error without an offset: %v", gerr)
			}
			if VerifyKernelFile(bytes.NewReader(b)) == nil {
				t.Fatal("VerifyKernelFile accepted what the walker refused")
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, protowire finds %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("record %d: %x, protowire %x", i, got[i], want[i])
			}
		}
		if !bytes.Equal(bytes.Join(got, nil), b) {
			t.Fatal("records do not tile the input")
		}
		if err := VerifyKernelFile(bytes.NewReader(b)); err != nil {
			t.Fatalf("VerifyKernelFile: %v", err)
		}
	})
}
