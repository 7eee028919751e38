package pjrt

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/xlacache/xlacache/cache"
)

// BackendName names the PJRT wrapper's entries: it is part of every key,
// so they never collide with another backend's.
const BackendName = "pjrt"

// keyParts returns the components of r's key. The key covers what an inner
// plugin's compile depends on: the program, the compile options, the inner
// plugin itself (the hash of its file, its platform and version, its PJRT
// API version), the devices it compiles for, and the host's CPU features:
// XLA:CPU compiles for the host it runs on, and its loader only logs a
// CPU-feature mismatch and runs the code anyway.
func (s *Server) keyParts(r Request) ([]cache.KeyPart, error) {
	opts, err := canonicalOptions(r.Options)
	if err != nil {
		return nil, err
	}
	if s.NormalizeOptions != nil && len(opts) > 0 {
		n, err := s.NormalizeOptions(opts)
		if err != nil {
			return nil, fmt.Errorf("normalizing compile options: %w", err)
		}
		opts = n
	}
	sum, err := s.hashes.sum(r.Plugin)
	if err != nil {
		return nil, fmt.Errorf("inner plugin identity: %w", err)
	}
	cpu := s.CPUFeatures
	if cpu == "" {
		cpu = hostCPU()
	}
	return []cache.KeyPart{
		{Name: "program", Data: programKey(r.Format, r.Program)},
		{Name: "options", Data: opts},
		{Name: "backend", Data: []byte(identity(r, sum))},
		{Name: "topology", Data: []byte(r.Topology)},
		{Name: "cpu", Data: []byte(cpu)},
	}, nil
}

// identity names the inner plugin that compiles r: the key's "backend"
// part, also recorded in every entry.
func identity(r Request, pluginSum string) string {
	return fmt.Sprintf("%s\nplugin-sha256 %s\nplatform %s\nplatform-version %s\npjrt-api %s\n",
		Protocol, pluginSum, r.Platform, r.PlatformVersion, r.APIVersion)
}

// fileHashes memoizes plugin file hashes by path and file identity (device,
// inode, size, modification and change times): a plugin is hundreds of
// megabytes, and a replaced or rewritten file gets a new identity, so a
// new hash. With dir set the memo also lives on disk (memoFile), so a new
// process does not hash the plugin again.
type fileHashes struct {
	mu  sync.Mutex
	m   map[string]hashed
	dir string
}

type hashed struct {
	id  string
	sum string
}

func fileID(st os.FileInfo) string {
	id := fmt.Sprintf("%d %d", st.Size(), st.ModTime().UnixNano())
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		// The change time cannot be set back by a user (touch sets only
		// the modification time): a file rewritten in place gets a new one.
		id += fmt.Sprintf(" %d %d %d.%09d", sys.Dev, sys.Ino, sys.Ctim.Sec, sys.Ctim.Nsec)
	}
	return id
}

// memoVersion heads every on-disk memo.
const memoVersion = "xlacache-pjrt-plugin-hash/1"

// memoFile is the on-disk memo of path's hash under identity id.
func (f *fileHashes) memoFile(path, id string) string {
	h := sha256.Sum256([]byte(path + "\x00" + id))
	return filepath.Join(f.dir, hex.EncodeToString(h[:16]))
}

// readMemo returns the hash recorded for path under identity id, or "".
// A memo decides which entries a plugin loads, so it is used only when it
// is a regular file owned by this user and writable by nobody else, in a
// directory of the same kind, and names this path and identity exactly.
func (f *fileHashes) readMemo(path, id string) string {
	name := f.memoFile(path, id)
	for _, p := range []string{f.dir, name} {
		st, err := os.Lstat(p)
		if err != nil {
			return ""
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o022 != 0 || st.Mode()&os.ModeSymlink != 0 {
			return ""
		}
	}
	data, err := os.ReadFile(name)
	if err != nil || len(data) > 4096 {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) != 5 || lines[0] != memoVersion || lines[1] != path || lines[2] != id || lines[4] != "" {
		return ""
	}
	if sum, err := hex.DecodeString(lines[3]); err != nil || len(sum) != sha256.Size {
		return ""
	}
	return lines[3]
}

// writeMemo records sum for path under identity id, best effort: without
// a memo the next process hashes the file again.
func (f *fileHashes) writeMemo(path, id, sum string) {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(f.dir, ".tmp-")
	if err != nil {
		return
	}
	_, err = fmt.Fprintf(tmp, "%s\n%s\n%s\n%s\n", memoVersion, path, id, sum)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		if os.Rename(tmp.Name(), f.memoFile(path, id)) == nil {
			return
		}
	}
	os.Remove(tmp.Name())
}

func (f *fileHashes) sum(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	id := fileID(st)
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.m[path]; ok && h.id == id {
		return h.sum, nil
	}
	if f.dir != "" {
		if sum := f.readMemo(path, id); sum != "" {
			f.remember(path, id, sum)
			return sum, nil
		}
	}
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	st2, err := fh.Stat()
	if err != nil {
		return "", err
	}
	if fileID(st2) != id {
		return "", fmt.Errorf("%s changed while it was hashed", path)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	f.remember(path, id, sum)
	if f.dir != "" {
		f.writeMemo(path, id, sum)
	}
	return sum, nil
}

func (f *fileHashes) remember(path, id, sum string) {
	if f.m == nil {
		f.m = map[string]hashed{}
	}
	f.m[path] = hashed{id: id, sum: sum}
}

var (
	cpuOnce sync.Once
	cpuDesc string
)

// hostCPU describes the host CPU as a compiler targeting it sees it: the
// architecture, and on Linux the vendor, family, model and feature flags
// of the first processor in /proc/cpuinfo (the model decides the CPU name
// LLVM tunes for, the flags which instructions it may use).
func hostCPU() string {
	cpuOnce.Do(func() {
		cpuDesc = describeCPU(runtime.GOARCH, "/proc/cpuinfo")
	})
	return cpuDesc
}

func describeCPU(arch, cpuinfo string) string {
	out := "arch " + arch + "\n"
	data, err := os.ReadFile(cpuinfo)
	if err != nil {
		return out
	}
	want := map[string]bool{"vendor_id": true, "cpu family": true, "model": true, "flags": true,
		"CPU implementer": true, "CPU architecture": true, "CPU variant": true, "CPU part": true, "Features": true}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && len(out) > len("arch "+arch+"\n") {
			break // the first processor only: every core of a host is alike
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if want[k] {
			if k == "flags" || k == "Features" {
				f := strings.Fields(v)
				v = strings.Join(f, " ")
			}
			out += k + " " + v + "\n"
		}
	}
	return out
}

var (
	reModule = regexp.MustCompile(`(?m)^\s*module\s+@([A-Za-z0-9_.$-]+)`)
	reMain   = regexp.MustCompile(`func\.func\s+(?:public\s+)?@main\s*\(`)
	reTensor = regexp.MustCompile(`^tensor<([0-9x]*?)x?([a-z]+[0-9]*)>$`)
)

// moduleName names an entry: the StableHLO module's name when the program
// is text that has one, else "pjrt".
func moduleName(r Request) string {
	if r.Format == "mlir" {
		if m := reModule.FindSubmatch(r.Program); m != nil {
			if n := cache.SanitizeModule(string(m[1])); n != "" {
				return n
			}
		}
	}
	return BackendName
}

// bufferTypes maps MLIR element types to PJRT_Buffer_Type values.
var bufferTypes = map[string]int{
	"i1": 1, "i8": 2, "i16": 3, "i32": 4, "i64": 5, "ui8": 6, "ui16": 7, "ui32": 8, "ui64": 9,
	"f16": 10, "f32": 11, "f64": 12, "bf16": 13,
}

// declaredSignature returns the output signature that a StableHLO text
// program's main function declares, in the wrapper's format
// ("o=N;t=T,T;d=AxB|C"), or "" when it cannot be read from the text
// (bytecode, HLO, tuples, complex or dynamic types): then the probe
// compares with the signature recorded when the entry was compiled.
func declaredSignature(r Request) string {
	if r.Format != "mlir" {
		return ""
	}
	loc := reMain.FindIndex(r.Program)
	if loc == nil {
		return ""
	}
	rest := r.Program[loc[1]:]
	// Skip the argument list, parentheses balanced.
	depth := 1
	i := 0
	for ; i < len(rest) && depth > 0; i++ {
		switch rest[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
	}
	if depth != 0 {
		return ""
	}
	rest = bytes.TrimSpace(rest[i:])
	if !bytes.HasPrefix(rest, []byte("->")) {
		return "o=0;t=;d=" // no results
	}
	rest = bytes.TrimSpace(rest[2:])
	var results string
	if rest[0] == '(' {
		end := bytes.IndexByte(rest, ')')
		if end < 0 {
			return ""
		}
		results = string(rest[1:end])
	} else {
		end := bytes.IndexAny(rest, " {\n")
		if end < 0 {
			return ""
		}
		results = string(rest[:end])
	}
	var types, dims []string
	for _, res := range splitTop(results) {
		res = strings.TrimSpace(res)
		if j := strings.Index(res, "{"); j >= 0 {
			res = strings.TrimSpace(res[:j]) // result attributes
		}
		m := reTensor.FindStringSubmatch(res)
		if m == nil {
			return ""
		}
		t, ok := bufferTypes[m[2]]
		if !ok {
			return ""
		}
		types = append(types, strconv.Itoa(t))
		dims = append(dims, m[1])
	}
	return fmt.Sprintf("o=%d;t=%s;d=%s", len(types), strings.Join(types, ","), strings.Join(dims, "|"))
}

// splitTop splits s at commas outside <>, {} and ().
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<', '{', '(':
			depth++
		case '>', '}', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
