package npy

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// dtypes maps StableHLO element types to NumPy descriptors. Both store
// complex numbers as (real, imaginary) pairs and f16 as IEEE binary16;
// bf16 has no NumPy type.
var dtypes = map[stablehlo.DType]string{
	stablehlo.F16: Float16, stablehlo.F32: Float32, stablehlo.F64: Float64, stablehlo.I1: Bool,
	stablehlo.C64: Complex64, stablehlo.C128: Complex128,
	stablehlo.I8: Int8, stablehlo.I16: Int16, stablehlo.I32: Int32, stablehlo.I64: Int64,
	stablehlo.UI8: Uint8, stablehlo.UI16: Uint16, stablehlo.UI32: Uint32, stablehlo.UI64: Uint64,
}

// ToTensor converts a to a tensor of type want, failing unless a has
// exactly want's element type and shape (no casts, no broadcasting).
func ToTensor(a *Array, want stablehlo.TensorType) (*stablehlo.Tensor, error) {
	if a.DType != dtypes[want.DType] {
		return nil, fmt.Errorf("dtype %s, want %s", a.DType, want)
	}
	got := stablehlo.TensorType{DType: want.DType, Shape: a.Shape}
	if !got.Equal(want) {
		return nil, fmt.Errorf("shape %v, want %s", a.Shape, want)
	}
	t := stablehlo.NewTensor(want)
	copy(t.Data, a.Data)
	return t, nil
}

// FromTensor converts t to an array. The array shares t's data.
func FromTensor(t *stablehlo.Tensor) (*Array, error) {
	d, ok := dtypes[t.Type.DType]
	if !ok {
		return nil, fmt.Errorf("cannot write %s to .npy", t.Type)
	}
	return &Array{DType: d, Shape: append([]int64{}, t.Type.Shape...), Data: t.Data}, nil
}

// WriteTensorsNPZ writes ts to an .npz file at path as out0, out1, ...
func WriteTensorsNPZ(path string, ts []*stablehlo.Tensor) error {
	named := make([]Named, 0, len(ts))
	for i, t := range ts {
		a, err := FromTensor(t)
		if err != nil {
			return err
		}
		named = append(named, Named{Name: fmt.Sprintf("out%d", i), Array: a})
	}
	return WriteNPZFile(path, named)
}

// LoadInputs builds fn's arguments as spec says: "random" (or empty) for
// stablehlo.RandomArgs with seed, else arrays read by LoadArgs.
func LoadInputs(spec string, fn *stablehlo.Func, seed uint64) ([]*stablehlo.Tensor, error) {
	if spec == "random" || spec == "" {
		return stablehlo.RandomArgs(fn, seed), nil
	}
	return LoadArgs(spec, fn)
}

// LoadArgs reads the arguments of fn from spec, which is one of:
//   - a comma-separated list of .npy files, one per argument in order;
//   - a directory holding <name>.npy (or arg<N>.npy) for each argument;
//   - an .npz archive, whose arrays are matched to arguments by name,
//     else as arg<N>, else by position when the counts agree.
//
// Every array must match its argument's type exactly. The type is checked
// from each array's header before its data is read, and the data is read
// straight into the argument's tensor: a file cannot make LoadArgs
// allocate more than fn's arguments need, whatever its header declares.
func LoadArgs(spec string, fn *stablehlo.Func) ([]*stablehlo.Tensor, error) {
	if strings.HasSuffix(spec, ".npy") {
		files := strings.Split(spec, ",")
		if len(files) != len(fn.Args) {
			return nil, fmt.Errorf("%d .npy files for %d arguments", len(files), len(fn.Args))
		}
		out := make([]*stablehlo.Tensor, len(files))
		for i, f := range files {
			t, err := readTensorFile(f, fn.Args[i].Type)
			if errors.Is(err, errMismatch) {
				return nil, fmt.Errorf("%s: argument #%d (%s): %w", f, i, fn.Args[i].Name, err)
			}
			if err != nil {
				return nil, fmt.Errorf("argument #%d: %w", i, err)
			}
			out[i] = t
		}
		return out, nil
	}
	st, err := os.Stat(spec)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return argsFromDir(spec, fn)
	}
	return argsFromNPZ(spec, fn)
}

// errMismatch marks an array whose element type or shape is not the
// argument's.
var errMismatch = errors.New("array does not match the argument")

// mismatch is an errMismatch with the details ToTensor gives.
type mismatch struct{ msg string }

func (m *mismatch) Error() string        { return m.msg }
func (m *mismatch) Is(target error) bool { return target == errMismatch }

// checkHeader fails unless h declares exactly want's element type and
// shape, with the messages ToTensor uses.
func checkHeader(h *header, want stablehlo.TensorType) error {
	if h.dtype != dtypes[want.DType] {
		return &mismatch{fmt.Sprintf("dtype %s, want %s", h.dtype, want)}
	}
	got := stablehlo.TensorType{DType: want.DType, Shape: h.shape}
	if !got.Equal(want) {
		return &mismatch{fmt.Sprintf("shape %v, want %s", h.shape, want)}
	}
	return nil
}

// readTensor reads one .npy stream as a tensor of type want, checking the
// header against want before reading (or allocating for) the data.
func readTensor(r io.Reader, want stablehlo.TensorType) (*stablehlo.Tensor, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if err := checkHeader(h, want); err != nil {
		return nil, err
	}
	if left, _ := remaining(r); left >= 0 && left < h.bytes {
		// Fail before allocating the tensor.
		_, err := readData(r, h, nil)
		return nil, err
	}
	t := stablehlo.NewTensor(want)
	if _, err := readData(r, h, t.Data); err != nil {
		return nil, err
	}
	return t, nil
}

// readTensorFile is readTensor on a file; errors name the file.
func readTensorFile(path string, want stablehlo.TensorType) (*stablehlo.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	t, err := readTensor(f, want)
	if err != nil && !errors.Is(err, errMismatch) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, err
}

// argsFromDir reads <name>.npy, else arg<N>.npy, for each argument.
func argsFromDir(dir string, fn *stablehlo.Func) ([]*stablehlo.Tensor, error) {
	out := make([]*stablehlo.Tensor, len(fn.Args))
	for i, a := range fn.Args {
		// Report a file that is there but unreadable (truncated, say)
		// rather than the absence of the fallback name.
		var firstErr error
		for _, n := range []string{a.Name, fmt.Sprintf("arg%d", i)} {
			if n == "" {
				continue
			}
			t, err := readTensorFile(filepath.Join(dir, n+".npy"), a.Type)
			if errors.Is(err, errMismatch) {
				return nil, fmt.Errorf("%s: argument #%d (%s): %w", dir, i, a.Name, err)
			}
			if err == nil {
				out[i] = t
				break
			}
			if firstErr == nil || (errors.Is(firstErr, fs.ErrNotExist) && !errors.Is(err, fs.ErrNotExist)) {
				firstErr = err
			}
		}
		if out[i] == nil {
			return nil, fmt.Errorf("%s: argument #%d (%s): %w", dir, i, a.Name, firstErr)
		}
	}
	return out, nil
}

// argsFromNPZ matches the members of an .npz archive to the arguments and
// reads only the matched ones, each straight into its tensor. The archive
// is read in place (zip needs random access, not a copy in memory).
func argsFromNPZ(path string, fn *stablehlo.Func) ([]*stablehlo.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("npz: %w", err)
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: npz: %w", path, err)
	}
	byName := map[string]*zip.File{}
	for _, m := range zr.File {
		name, ok := strings.CutSuffix(m.Name, ".npy")
		if !ok {
			return nil, fmt.Errorf("%s: npz: member %q is not a .npy file", path, m.Name)
		}
		if byName[name] != nil {
			return nil, fmt.Errorf("%s: npz: duplicate member %q", path, m.Name)
		}
		byName[name] = m
	}
	out := make([]*stablehlo.Tensor, len(fn.Args))
	mem := newBudget()
	for i, a := range fn.Args {
		m := byName[a.Name]
		if m == nil {
			m = byName[fmt.Sprintf("arg%d", i)]
		}
		if m == nil && len(zr.File) == len(fn.Args) {
			m = zr.File[i]
		}
		if m == nil {
			return nil, fmt.Errorf("%s: no array for argument #%d (%s)", path, i, a.Name)
		}
		rc, sr, err := mem.open(m)
		if err != nil {
			return nil, fmt.Errorf("%s: npz: %w", path, err)
		}
		out[i], err = readTensor(sr, a.Type)
		rc.Close()
		if errors.Is(err, errMismatch) {
			return nil, fmt.Errorf("%s: argument #%d (%s): %w", path, i, a.Name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: npz: member %q: %w", path, m.Name, err)
		}
	}
	return out, nil
}
