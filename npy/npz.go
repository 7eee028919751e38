package npy

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
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

// ReadNPZ reads every array of an .npz archive (stored or deflated), in
// archive order.
func ReadNPZ(r io.ReaderAt, size int64) ([]Named, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	var out []Named
	seen := map[string]bool{}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") {
			return nil, fmt.Errorf("npz: member %q is not a .npy file", f.Name)
		}
		name := strings.TrimSuffix(f.Name, ".npy")
		if seen[name] {
			return nil, fmt.Errorf("npz: duplicate member %q", f.Name)
		}
		seen[name] = true
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("npz: member %q: %w", f.Name, err)
		}
		a, err := Read(&sizedReader{r: io.LimitReader(rc, maxMember), left: memberSize(f)})
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
