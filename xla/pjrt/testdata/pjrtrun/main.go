// Command pjrtrun is the PJRT host the pjrt package's tests and benchmark
// run as separate processes: it loads a plugin through go-xla's real
// loader (by name, through PJRT_PLUGIN_LIBRARY_PATH, or by path), compiles
// StableHLO text files, runs each once on deterministic inputs and prints
// one JSON line: per program the compile time and a SHA-256 of the
// outputs' bytes, and the wrapper's counters when the plugin is the
// caching wrapper.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/go-xla/pkg/pjrt"

	"github.com/gomlx/go-xla/pkg/types/dtypes"
	"github.com/xlacache/xlacache/internal/pjrtcounters"
)

var start = time.Now()

type result struct {
	Program   string  `json:"program"`
	CompileMS float64 `json:"compile_ms"`
	// ReadyMS is the time from process start until the program was
	// compiled (or loaded) and ready to run.
	ReadyMS float64 `json:"ready_ms"`
	Outputs string  `json:"outputs_sha256"`
	Err     string  `json:"err,omitempty"`
}

type report struct {
	Plugin   string   `json:"plugin"`
	Results  []result `json:"results"`
	Counters []uint64 `json:"counters,omitempty"` // inner compiles, hits, fallbacks, stored, deserialize ns
}

func main() {
	plugin := flag.String("plugin", "cpu", "plugin name or path")
	parallel := flag.Int("parallel", 1, "goroutines compiling each program at once")
	flag.Parse()
	p, err := pjrt.GetPlugin(*plugin)
	if err != nil {
		fail(err)
	}
	client, err := p.NewClient(nil)
	if err != nil {
		fail(err)
	}
	rep := report{Plugin: p.Path()}
	for _, file := range flag.Args() {
		text, err := os.ReadFile(file)
		if err != nil {
			fail(err)
		}
		res := make([]result, *parallel)
		var wg sync.WaitGroup
		for i := range res {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = run(client, file, text)
			}()
		}
		wg.Wait()
		rep.Results = append(rep.Results, res...)
	}
	if c, err := pjrtcounters.Read(p.Path()); err == nil {
		rep.Counters = []uint64{c.InnerCompiles, c.Hits, c.Fallbacks, c.Stored, uint64(c.Deserialize)}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pjrtrun:", err)
	os.Exit(1)
}

func run(client *pjrt.Client, name string, text []byte) result {
	r := result{Program: name}
	t0 := time.Now()
	exe, err := client.Compile().WithStableHLO(text).Done()
	r.CompileMS = float64(time.Since(t0).Microseconds()) / 1000
	r.ReadyMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer exe.Destroy()
	var inputs []*pjrt.Buffer
	for i, arg := range arguments(text) {
		b, err := client.BufferFromHost().FromRawData(arg.data(i), arg.dtype, arg.dims).Done()
		if err != nil {
			r.Err = err.Error()
			return r
		}
		defer b.Destroy()
		inputs = append(inputs, b)
	}
	outs, err := exe.Execute(inputs...).DonateNone().Done()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	h := sha256.New()
	for _, o := range outs {
		n, err := o.Size()
		if err != nil {
			r.Err = err.Error()
			return r
		}
		buf := make([]byte, n)
		if err := o.ToHost(buf); err != nil {
			r.Err = err.Error()
			return r
		}
		h.Write(buf)
		o.Destroy()
	}
	r.Outputs = hex.EncodeToString(h.Sum(nil))
	return r
}

type argument struct {
	dtype dtypes.DType
	dims  []int
}

var (
	reMain = regexp.MustCompile(`func\.func\s+(?:public\s+)?@main\(([^)]*)\)`)
	reArg  = regexp.MustCompile(`tensor<([0-9x]*?)x?(f32|i32)>`)
)

// arguments reads main's parameter shapes from the program text.
func arguments(text []byte) []argument {
	m := reMain.FindSubmatch(text)
	if m == nil {
		fail(fmt.Errorf("no main function"))
	}
	var out []argument
	for _, a := range reArg.FindAllStringSubmatch(string(m[1]), -1) {
		arg := argument{dtype: dtypes.Float32}
		if a[2] == "i32" {
			arg.dtype = dtypes.Int32
		}
		if a[1] != "" {
			for d := range strings.SplitSeq(a[1], "x") {
				n, err := strconv.Atoi(d)
				if err != nil {
					fail(err)
				}
				arg.dims = append(arg.dims, n)
			}
		}
		out = append(out, arg)
	}
	return out
}

// data fills an argument deterministically: small floats from a fixed
// sequence, and indices below 16 for integer arguments (in range of every
// example's tables).
func (a argument) data(seed int) []byte {
	n := 1
	for _, d := range a.dims {
		n *= d
	}
	out := make([]byte, 4*n)
	x := uint32(2463534242 + seed)
	for i := range n {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		if a.dtype == dtypes.Int32 {
			binary.LittleEndian.PutUint32(out[4*i:], x%16)
		} else {
			f := (float32(x%2001) - 1000) / 10000
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		}
	}
	return out
}
