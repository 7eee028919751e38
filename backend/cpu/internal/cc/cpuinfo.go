package cc

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// CPUInfo describes the host processor for keys: code built with
// -march=native, and autotuning results, are only valid on the same model
// with the same features.
type CPUInfo struct {
	// Arch is runtime.GOARCH.
	Arch string
	// Model is the processor's model name, or its implementer/part codes on
	// machines whose /proc/cpuinfo has no model name.
	Model string
	// Features are the processor's feature flags, sorted.
	Features []string
	// Cores is the number of logical CPUs, which affects tuning results.
	Cores int
	// MHz is the clock /proc/cpuinfo reports (often the nominal clock in a
	// VM). It is informational: not part of Key, since it varies.
	MHz float64
}

var (
	cpuOnce sync.Once
	cpuInfo CPUInfo
)

// DetectCPU reads /proc/cpuinfo once per process. Where that file is absent
// the model and features are empty and only the architecture identifies the
// machine, which is conservative enough: native code is then keyed on the
// compiler's own target.
func DetectCPU() CPUInfo {
	cpuOnce.Do(func() {
		cpuInfo = CPUInfo{Arch: runtime.GOARCH, Cores: runtime.NumCPU()}
		data, err := os.ReadFile("/proc/cpuinfo")
		if err == nil {
			cpuInfo.Model, cpuInfo.Features = parseCPUInfo(data)
			cpuInfo.MHz = parseMHz(data)
		}
	})
	return cpuInfo
}

// parseCPUInfo extracts the first processor's model and feature list.
func parseCPUInfo(data []byte) (model string, features []string) {
	var implementer, part string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" && (model != "" || features != nil) {
			break // end of the first processor's block
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "cpu model", "Model Name":
			if model == "" {
				model = v
			}
		case "CPU implementer":
			implementer = v
		case "CPU part":
			part = v
		case "flags", "Features", "isa":
			if features == nil {
				features = strings.Fields(v)
				sort.Strings(features)
			}
		}
	}
	if model == "" && (implementer != "" || part != "") {
		model = "implementer " + implementer + " part " + part
	}
	return model, features
}

// parseMHz returns the first "cpu MHz" value, or 0.
func parseMHz(data []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && f > 0 {
				return f
			}
			return 0
		}
	}
	return 0
}

// Key is the text form used in keys.
func (c CPUInfo) Key() string {
	return c.Arch + "|" + c.Model + "|" + strings.Join(c.Features, ",")
}

// Summary is a short human-readable description.
func (c CPUInfo) Summary() string {
	var simd []string
	for _, f := range c.Features {
		switch f {
		case "sse4_2", "avx", "avx2", "fma", "avx512f", "neon", "asimd", "sve":
			simd = append(simd, f)
		}
	}
	m := c.Model
	if m == "" {
		m = c.Arch
	}
	return m + " [" + strings.Join(simd, " ") + "]"
}

// PeakGFLOPS estimates the single-core f32 FMA peak from the widest vector
// unit, assuming two FMA pipes and the given clock. It is an estimate for
// reporting benchmark ratios, not a measurement.
func (c CPUInfo) PeakGFLOPS(ghz float64) float64 {
	has := func(f string) bool {
		i := sort.SearchStrings(c.Features, f)
		return i < len(c.Features) && c.Features[i] == f
	}
	lanes := 4.0 // SSE / NEON
	switch {
	case has("avx512f"):
		lanes = 16
	case has("avx2") || has("avx"):
		lanes = 8
	}
	fmaFactor := 1.0
	if has("fma") || has("avx512f") || c.Arch == "arm64" {
		fmaFactor = 2
	}
	return ghz * lanes * fmaFactor * 2 // two vector pipes
}
