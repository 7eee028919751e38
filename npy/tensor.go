package npy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// dtypes maps StableHLO element types to NumPy descriptors.
var dtypes = map[stablehlo.DType]string{
	stablehlo.F32: Float32, stablehlo.F64: Float64, stablehlo.I1: Bool,
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

// LoadArgs reads the arguments of fn from spec, which is one of:
//   - a comma-separated list of .npy files, one per argument in order;
//   - a directory holding <name>.npy (or arg<N>.npy) for each argument;
//   - an .npz archive, whose arrays are matched to arguments by name,
//     else as arg<N>, else by position when the counts agree.
//
// Every array must match its argument's type exactly.
func LoadArgs(spec string, fn *stablehlo.Func) ([]*stablehlo.Tensor, error) {
	if strings.HasSuffix(spec, ".npy") {
		files := strings.Split(spec, ",")
		if len(files) != len(fn.Args) {
			return nil, fmt.Errorf("%d .npy files for %d arguments", len(files), len(fn.Args))
		}
		out := make([]*stablehlo.Tensor, len(files))
		for i, f := range files {
			arr, err := ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("argument #%d: %w", i, err)
			}
			if out[i], err = ToTensor(arr, fn.Args[i].Type); err != nil {
				return nil, fmt.Errorf("%s: argument #%d (%s): %w", f, i, fn.Args[i].Name, err)
			}
		}
		return out, nil
	}
	st, err := os.Stat(spec)
	if err != nil {
		return nil, err
	}
	var arrays []*Array
	if st.IsDir() {
		arrays, err = argsFromDir(spec, fn)
	} else {
		arrays, err = argsFromNPZ(spec, fn)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*stablehlo.Tensor, len(fn.Args))
	for i, a := range fn.Args {
		if out[i], err = ToTensor(arrays[i], a.Type); err != nil {
			return nil, fmt.Errorf("%s: argument #%d (%s): %w", spec, i, a.Name, err)
		}
	}
	return out, nil
}

// argsFromDir reads <name>.npy, else arg<N>.npy, for each argument.
func argsFromDir(dir string, fn *stablehlo.Func) ([]*Array, error) {
	arrays := make([]*Array, len(fn.Args))
	for i, a := range fn.Args {
		var lastErr error
		for _, n := range []string{a.Name, fmt.Sprintf("arg%d", i)} {
			if n == "" {
				continue
			}
			if arrays[i], lastErr = ReadFile(filepath.Join(dir, n+".npy")); lastErr == nil {
				break
			}
		}
		if arrays[i] == nil {
			return nil, fmt.Errorf("%s: argument #%d (%s): %w", dir, i, a.Name, lastErr)
		}
	}
	return arrays, nil
}

// argsFromNPZ matches the arrays of an .npz archive to the arguments.
func argsFromNPZ(path string, fn *stablehlo.Func) ([]*Array, error) {
	all, err := ReadNPZFile(path)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Array{}
	for _, a := range all {
		byName[a.Name] = a.Array
	}
	arrays := make([]*Array, len(fn.Args))
	for i, a := range fn.Args {
		arr := byName[a.Name]
		if arr == nil {
			arr = byName[fmt.Sprintf("arg%d", i)]
		}
		if arr == nil && len(all) == len(fn.Args) {
			arr = all[i].Array
		}
		if arr == nil {
			return nil, fmt.Errorf("%s: no array for argument #%d (%s)", path, i, a.Name)
		}
		arrays[i] = arr
	}
	return arrays, nil
}
