package npy

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/xlacache/xlacache/internal/sysmem"
)

// Named is an array with its name in an .npz archive (the member name
// without ".npy").
type Named struct {
	Name  string
	Array *Array
}

// maxMember bounds one decompressed archive member, so that a small
// malicious archive cannot exhaust memory.
const maxMember = 8 << 30

// npzBudget is what all the members of one archive may decompress to
// together: at most maxMember, and at most half of the memory this
// process can still allocate. A bound per member alone let a 3 MB archive
// of many deflated members each declaring gigabytes of zeros exhaust
// memory (a fatal out-of-memory, which no caller can recover from).
var npzBudget = func() int64 {
	b := int64(maxMember)
	if l, ok := sysmem.Available(); ok && l.Bytes/2 < b {
		b = max(l.Bytes/2, 1<<20)
	}
	return b
}

// budget is what is left of one archive's npzBudget.
type budget struct{ total, left int64 }

func newBudget() *budget {
	b := npzBudget()
	return &budget{total: b, left: b}
}

// open opens member f for reading through a reader that the .npy decoder
// can size (sizedReader) and that cannot yield more than the member's
// declared size, after charging that size to the archive's budget.
func (b *budget) open(f *zip.File) (io.ReadCloser, *sizedReader, error) {
	size := memberSize(f)
	if size > b.left {
		return nil, nil, fmt.Errorf("member %q declares %d bytes uncompressed, more than the %d bytes left of the %s that all of one archive's arrays may take",
			f.Name, f.UncompressedSize64, b.left, sysmem.FormatBytes(b.total))
	}
	b.left -= size
	rc, err := f.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("member %q: %w", f.Name, err)
	}
	return rc, &sizedReader{r: io.LimitReader(rc, size), left: size}, nil
}

// ReadNPZ reads every array of an .npz archive (stored or deflated), in
// archive order.
func ReadNPZ(r io.ReaderAt, size int64) ([]Named, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	var out []Named
	seen := map[string]bool{}
	mem := newBudget()
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") {
			return nil, fmt.Errorf("npz: member %q is not a .npy file", f.Name)
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		if seen[name] {
			return nil, fmt.Errorf("npz: duplicate member %q", f.Name)
		}
		seen[name] = true
		rc, sr, err := mem.open(f)
		if err != nil {
			return nil, fmt.Errorf("npz: %w", err)
		}
		a, err := Read(sr)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("npz: member %q: %w", f.Name, err)
		}
		out = append(out, Named{Name: name, Array: a})
	}
	return out, nil
}

// memberSize is the uncompressed size f's directory entry declares, capped
// at maxMember. archive/zip fails a member whose data does not match it.
func memberSize(f *zip.File) int64 {
	if f.UncompressedSize64 > maxMember {
		return maxMember
	}
	return int64(f.UncompressedSize64)
}

// WriteNPZ writes arrays as an uncompressed .npz archive, as numpy.savez does.
func WriteNPZ(w io.Writer, arrays []Named) error {
	zw := zip.NewWriter(w)
	for _, n := range arrays {
		if n.Name == "" || strings.ContainsAny(n.Name, "/\\") {
			return fmt.Errorf("npz: invalid array name %q", n.Name)
		}
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: n.Name + ".npy", Method: zip.Store})
		if err != nil {
			return fmt.Errorf("npz: %w", err)
		}
		if err := Write(fw, n.Array); err != nil {
			return fmt.Errorf("npz: array %q: %w", n.Name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	return nil
}

// ReadNPZFile reads an .npz file.
func ReadNPZFile(path string) ([]Named, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	arrays, err := ReadNPZ(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return arrays, nil
}

// WriteNPZFile writes an .npz file with owner-only permissions.
func WriteNPZFile(path string, arrays []Named) error {
	return writeFile(path, "npz", func(w io.Writer) error { return WriteNPZ(w, arrays) })
}
