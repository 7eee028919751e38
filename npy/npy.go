// Package npy reads and writes NumPy's .npy array files and .npz archives,
// so that inputs and outputs of `xlacache run` can be produced and checked
// with NumPy or any other tool that speaks the format.
//
// Arrays are held as raw little-endian, row-major bytes; big-endian and
// Fortran-ordered files are converted on read. Only the fixed-size numeric
// and boolean dtypes that StableHLO programs use are supported.
//
// ToTensor, FromTensor and LoadArgs convert between arrays and
// stablehlo.Tensor values, matching a program's arguments by name or
// position.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Supported dtype descriptors, in NumPy's little-endian spelling.
const (
	Bool       = "|b1"
	Int8       = "|i1"
	Uint8      = "|u1"
	Int16      = "<i2"
	Uint16     = "<u2"
	Int32      = "<i4"
	Uint32     = "<u4"
	Int64      = "<i8"
	Uint64     = "<u8"
	Float16    = "<f2"
	Float32    = "<f4"
	Float64    = "<f8"
	Complex64  = "<c8"
	Complex128 = "<c16"
)

var magic = []byte("\x93NUMPY")

// maxHeader bounds the header a reader accepts; NumPy itself caps v1
// headers at 64 KiB and real headers are under 200 bytes.
const maxHeader = 1 << 20

// Array is one n-dimensional array.
type Array struct {
	// DType is a little-endian NumPy descriptor, one of the constants above.
	DType string
	// Shape is the array's dimensions; empty for a scalar.
	Shape []int64
	// Data holds the elements in little-endian row-major order.
	Data []byte
}

// ItemSize returns the byte size of one element of dtype, or 0 when the
// dtype is not supported.
func ItemSize(dtype string) int {
	switch dtype {
	case Bool, Int8, Uint8:
		return 1
	case Int16, Uint16, Float16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64, Complex64:
		return 8
	case Complex128:
		return 16
	}
	return 0
}

// NumElements returns the product of shape, or an error when a dimension is
// negative or the product overflows.
func NumElements(shape []int64) (int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("npy: negative dimension %d in shape %v", d, shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("npy: shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}

// Validate checks that the dtype is supported and Data has exactly the
// size the shape implies.
func (a *Array) Validate() error {
	size := ItemSize(a.DType)
	if size == 0 {
		return fmt.Errorf("npy: unsupported dtype %q", a.DType)
	}
	n, err := NumElements(a.Shape)
	if err != nil {
		return err
	}
	if n > math.MaxInt64/int64(size) || int64(len(a.Data)) != n*int64(size) {
		return fmt.Errorf("npy: %s array of shape %v needs %d elements of %d bytes, have %d bytes", a.DType, a.Shape, n, size, len(a.Data))
	}
	return nil
}

// Write writes a as a version 1.0 .npy file (2.0 if the header needs it).
func Write(w io.Writer, a *Array) error {
	if err := a.Validate(); err != nil {
		return err
	}
	var sb strings.Builder
	sb.WriteString("{'descr': '")
	sb.WriteString(a.DType)
	sb.WriteString("', 'fortran_order': False, 'shape': (")
	for i, d := range a.Shape {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.FormatInt(d, 10))
	}
	if len(a.Shape) == 1 {
		sb.WriteString(",")
	}
	sb.WriteString("), }")
	header := sb.String()
	// Pad with spaces and a newline so the data starts 64-byte aligned,
	// as NumPy does.
	major, prefix := byte(1), 10
	if len(header)+1+prefix > math.MaxUint16 {
		major, prefix = 2, 12
	}
	total := prefix + len(header) + 1
	pad := (64 - total%64) % 64
	header += strings.Repeat(" ", pad) + "\n"
	var buf bytes.Buffer
	buf.Write(magic)
	buf.WriteByte(major)
	buf.WriteByte(0)
	if major == 1 {
		binary.Write(&buf, binary.LittleEndian, uint16(len(header)))
	} else {
		binary.Write(&buf, binary.LittleEndian, uint32(len(header)))
	}
	buf.WriteString(header)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("npy: writing header: %w", err)
	}
	if _, err := w.Write(a.Data); err != nil {
		return fmt.Errorf("npy: writing data: %w", err)
	}
	return nil
}

// Read reads one .npy array from r. The data's size is checked against
// what r has left when r can tell (a file, a bytes.Reader, an archive
// member), so a header that declares a huge array costs an error, not an
// allocation; other readers cost only the bytes actually present.
func Read(r io.Reader) (*Array, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	data, err := readData(r, h, nil)
	if err != nil {
		return nil, err
	}
	return &Array{DType: h.dtype, Shape: h.shape, Data: data}, nil
}

// header is what a .npy file says about its array before the data.
type header struct {
	descr   string // as written ("<f4", ">i8")
	dtype   string // the little-endian constant for descr
	fortran bool
	shape   []int64
	size    int   // bytes per element
	bytes   int64 // data bytes the header declares
}

// readHeader reads the magic, version and header of a .npy stream and
// checks that the declared array size is representable.
func readHeader(r io.Reader) (*header, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("npy: reading magic: %w", err)
	}
	if !bytes.Equal(pre[:6], magic) {
		return nil, errors.New("npy: not a .npy file (bad magic)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var n uint16
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", err)
		}
		hlen = int(n)
	case 2, 3:
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", err)
		}
		if n > maxHeader {
			return nil, fmt.Errorf("npy: header length %d exceeds %d", n, maxHeader)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", pre[6], pre[7])
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("npy: reading header: %w", err)
	}
	descr, fortran, shape, err := parseHeader(string(hdr))
	if err != nil {
		return nil, err
	}
	le, err := normalizeDescr(descr)
	if err != nil {
		return nil, err
	}
	size := ItemSize(le)
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if n > math.MaxInt64/int64(size) {
		return nil, fmt.Errorf("npy: shape %v is too large", shape)
	}
	return &header{descr: descr, dtype: le, fortran: fortran, shape: shape, size: size, bytes: n * int64(size)}, nil
}

// readData reads the data h declares from r, into dst when it is not nil
// (dst must have exactly h.bytes), and converts it to little-endian
// row-major order.
func readData(r io.Reader, h *header, dst []byte) ([]byte, error) {
	short := func(have int64) error {
		return fmt.Errorf("npy: %s array of shape %v needs %d data bytes, file has %d", h.descr, h.shape, h.bytes, have)
	}
	left, exact := remaining(r)
	if left >= 0 && left < h.bytes {
		return nil, short(left)
	}
	var data []byte
	switch {
	case dst != nil || exact:
		// The bytes are there (or the caller already holds the buffer):
		// read them in place instead of growing a buffer to twice the size.
		data = dst
		if data == nil {
			data = make([]byte, h.bytes)
		}
		if n, err := io.ReadFull(r, data); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				return nil, short(int64(n))
			}
			return nil, fmt.Errorf("npy: reading data: %w", err)
		}
	default:
		// Read through a limit so a header that claims a huge shape costs
		// only the bytes actually present.
		var err error
		data, err = io.ReadAll(io.LimitReader(r, h.bytes))
		if err != nil {
			return nil, fmt.Errorf("npy: reading data: %w", err)
		}
		if int64(len(data)) != h.bytes {
			return nil, short(int64(len(data)))
		}
	}
	if h.descr[0] == '>' && h.size > 1 {
		swapBytes(data, swapUnit(h.dtype))
	}
	if h.fortran && len(h.shape) > 1 {
		c := fortranToC(data, h.shape, h.size)
		if dst == nil {
			return c, nil
		}
		copy(dst, c)
	}
	return data, nil
}

// sizedReader is an archive member's reader with the size its directory
// declares; the size bounds what the member can hold but is not a promise
// that the bytes are there.
type sizedReader struct {
	r    io.Reader
	left int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.left -= int64(n)
	return n, err
}

// remaining reports how many bytes r has left, or -1 when it cannot tell;
// exact is true when they are known to be there (a file's or a buffer's),
// false for a declared bound.
func remaining(r io.Reader) (left int64, exact bool) {
	switch r := r.(type) {
	case *bytes.Reader:
		return int64(r.Len()), true
	case *strings.Reader:
		return int64(r.Len()), true
	case *sizedReader:
		return max(r.left, 0), false
	case *os.File:
		st, err := r.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return -1, false
		}
		off, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1, false
		}
		return max(st.Size()-off, 0), true
	}
	return -1, false
}

// normalizeDescr maps a NumPy descriptor to the little-endian constant.
func normalizeDescr(d string) (string, error) {
	if len(d) < 2 {
		return "", fmt.Errorf("npy: unsupported dtype %q", d)
	}
	order, kind := d[0], d[1:]
	switch order {
	case '<', '|', '=', '>':
	default:
		return "", fmt.Errorf("npy: unsupported dtype %q", d)
	}
	for _, c := range []string{Bool, Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64, Float16, Float32, Float64, Complex64, Complex128} {
		if c[1:] == kind {
			return c, nil
		}
	}
	return "", fmt.Errorf("npy: unsupported dtype %q", d)
}

// swapUnit is the width of the numbers an element of dtype is made of:
// the element, or each part of a complex one (a big-endian complex
// number is two big-endian floats, real part first).
func swapUnit(dtype string) int {
	if dtype == Complex64 || dtype == Complex128 {
		return ItemSize(dtype) / 2
	}
	return ItemSize(dtype)
}

func swapBytes(data []byte, size int) {
	for i := 0; i+size <= len(data); i += size {
		for a, b := i, i+size-1; a < b; a, b = a+1, b-1 {
			data[a], data[b] = data[b], data[a]
		}
	}
}

// fortranToC reorders column-major data into row-major order.
func fortranToC(data []byte, shape []int64, size int) []byte {
	out := make([]byte, len(data))
	r := len(shape)
	idx := make([]int64, r)
	n := len(data) / size
	for c := 0; c < n; c++ { // c walks row-major output order
		// column-major offset of idx
		off, stride := int64(0), int64(1)
		for d := 0; d < r; d++ {
			off += idx[d] * stride
			stride *= shape[d]
		}
		copy(out[c*size:(c+1)*size], data[off*int64(size):(off+1)*int64(size)])
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// parseHeader parses the Python dict literal of a .npy header. It accepts
// exactly the three keys NumPy writes, in any order.
func parseHeader(h string) (descr string, fortran bool, shape []int64, err error) {
	s := strings.TrimSpace(h)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return "", false, nil, fmt.Errorf("npy: header is not a dict: %.80q", h)
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	seen := map[string]bool{}
	for s != "" {
		var key string
		key, s, err = pyString(s)
		if err != nil {
			return "", false, nil, fmt.Errorf("npy: header key: %w", err)
		}
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, ":") {
			return "", false, nil, fmt.Errorf("npy: header: missing ':' after %q", key)
		}
		s = strings.TrimSpace(s[1:])
		if seen[key] {
			return "", false, nil, fmt.Errorf("npy: header: duplicate key %q", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			descr, s, err = pyString(s)
		case "fortran_order":
			switch {
			case strings.HasPrefix(s, "True"):
				fortran, s = true, s[4:]
			case strings.HasPrefix(s, "False"):
				fortran, s = false, s[5:]
			default:
				err = fmt.Errorf("fortran_order is not True or False")
			}
		case "shape":
			shape, s, err = pyTuple(s)
		default:
			err = fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return "", false, nil, fmt.Errorf("npy: header: %w", err)
		}
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, ",") {
			s = strings.TrimSpace(s[1:])
		} else if s != "" {
			return "", false, nil, fmt.Errorf("npy: header: expected ',' near %.40q", s)
		}
	}
	if !seen["descr"] || !seen["shape"] {
		return "", false, nil, errors.New("npy: header lacks descr or shape")
	}
	return descr, fortran, shape, nil
}

func pyString(s string) (string, string, error) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, fmt.Errorf("expected a quoted string near %.40q", s)
	}
	body, rest, ok := strings.Cut(s[1:], s[:1])
	if !ok {
		return "", s, errors.New("unterminated string")
	}
	return body, rest, nil
}

func pyTuple(s string) ([]int64, string, error) {
	if !strings.HasPrefix(s, "(") {
		return nil, s, fmt.Errorf("shape is not a tuple near %.40q", s)
	}
	body, rest, ok := strings.Cut(s[1:], ")")
	if !ok {
		return nil, s, errors.New("unterminated shape tuple")
	}
	shape := []int64{}
	for _, f := range strings.Split(body, ",") {
		f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "L"))
		if f == "" {
			continue
		}
		d, err := strconv.ParseInt(f, 10, 64)
		if err != nil || d < 0 {
			return nil, s, fmt.Errorf("bad dimension %q", f)
		}
		shape = append(shape, d)
	}
	if len(shape) > 64 {
		return nil, s, fmt.Errorf("shape has %d dimensions", len(shape))
	}
	return shape, rest, nil
}

// ReadFile reads a .npy file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	a, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// WriteFile writes a .npy file with owner-only permissions.
func WriteFile(path string, a *Array) error {
	return writeFile(path, "npy", func(w io.Writer) error { return Write(w, a) })
}

// writeFile encodes a whole file with encode before creating it, so an
// array that cannot be encoded leaves no partial file behind; errors name
// path (encoding) or format (the file system).
func writeFile(path, format string, encode func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := encode(&buf); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("%s: %w", format, err)
	}
	return nil
}
