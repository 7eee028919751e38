package compilerbench

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// secs formats seconds; negative is n/a.
func secs(s float64) string {
	switch {
	case s < 0 || math.IsNaN(s):
		return "n/a"
	case s < 1e-3:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}

func ratio(x float64) string {
	switch {
	case x <= 0 || math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case x >= 100:
		return fmt.Sprintf("%.0f×", x)
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// best is the fastest correct cell of engines whose label starts with
// prefix, for one program and thread count; by run time or compile time.
func best(cells []cell, prog string, n int, prefix string, byCompile bool) *cell {
	var out *cell
	for i := range cells {
		c := &cells[i]
		if c.Program != prog || c.Threads != n || !strings.HasPrefix(c.Engine, prefix) || c.Wrong != "" || c.Skip != "" {
			continue
		}
		v, w := c.Run, 0.0
		if out != nil {
			w = out.Run
		}
		if byCompile {
			v = c.CompileS
			if out != nil {
				w = out.CompileS
			}
		}
		if out == nil || v < w {
			out = c
		}
	}
	return out
}

func find(cells []cell, prog string, n int, engine string) *cell {
	for i := range cells {
		if c := &cells[i]; c.Program == prog && c.Threads == n && c.Engine == engine {
			return c
		}
	}
	return nil
}

// renderTable is the full table: every cell, its times and its run time
// as a ratio to the fastest correct XLA:CPU plugin (above 1: faster than
// XLA:CPU).
func renderTable(cells []cell, refs map[string]string, specs []engineSpec, ts []int) string {
	var b strings.Builder
	b.WriteString("| program | engine | threads | cold compile | warm start | run (median) | runs | XLA:CPU run ÷ this run | outputs |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	var progs []string
	for _, c := range cells {
		if len(progs) == 0 || progs[len(progs)-1] != c.Program {
			progs = append(progs, c.Program)
		}
	}
	for _, p := range progs {
		for _, n := range ts {
			x := best(cells, p, n, "XLA:CPU", false)
			for _, s := range specs {
				c := find(cells, p, n, s.label)
				if c == nil {
					continue
				}
				check := fmt.Sprintf("ok (%.2g of tol.)", c.Worst)
				run, vs := secs(c.Run), "n/a"
				if c.Skip != "" {
					check, run = c.Skip, "—"
				} else if c.Wrong != "" {
					check = "**WRONG/FAILED**: " + strings.ReplaceAll(truncate(c.Wrong, 160), "|", "\\|")
					run = "—"
				} else if x != nil {
					vs = ratio(x.Run / c.Run)
				}
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %d | %s | %s |\n",
					p, s.label, n, secs(c.CompileS), secs(c.WarmS), run, len(c.RunsS), vs, check)
			}
		}
	}
	b.WriteString("\nReferences: ")
	for i, p := range progs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", p, refs[p])
	}
	b.WriteString(".\n")
	return b.String()
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// goal is one row of the goals table for one program and thread count.
type goal struct {
	vsXLA, vsIREE, untunedCompile, tunedCompile, warm float64 // NaN: not measurable
}

func goals(cells []cell, prog string, n int) goal {
	g := goal{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	tuned := find(cells, prog, n, "xlacache cpu, tuned")
	untuned := find(cells, prog, n, "xlacache cpu, untuned")
	xr := best(cells, prog, n, "XLA:CPU", false)
	xc := best(cells, prog, n, "XLA:CPU", true)
	ir := best(cells, prog, n, "IREE", false)
	if tuned != nil && tuned.Wrong == "" {
		if xr != nil {
			g.vsXLA = xr.Run / tuned.Run
		}
		if ir != nil {
			g.vsIREE = ir.Run / tuned.Run
		}
		if xc != nil {
			g.tunedCompile = tuned.CompileS / xc.CompileS
			g.warm = xc.CompileS / tuned.WarmS
		}
	}
	if untuned != nil && untuned.Wrong == "" && xc != nil {
		g.untunedCompile = xc.CompileS / untuned.CompileS
	}
	return g
}

// mark says whether a ratio meets its goal.
func mark(x float64, ok bool) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	if ok {
		return ratio(x) + " ✓"
	}
	return ratio(x) + " ✗"
}

// renderSummary is the goals table of issue 23 and a count of goals met.
func renderSummary(cells []cell) string {
	var b strings.Builder
	b.WriteString("| program | threads | run: XLA:CPU ÷ cpu (goal ≥ 1) | run: IREE ÷ cpu (goal ≥ 1) | compile, untuned: XLA:CPU ÷ cpu (goal ≥ 1) | compile, tuned: cpu ÷ XLA:CPU (goal ≤ 3) | warm start: XLA:CPU compile ÷ cpu warm (goal ≥ 100) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	met, total := 0, 0
	var geo [5]float64
	var geoN [5]int
	seen := map[string]bool{}
	for _, c := range cells {
		k := fmt.Sprint(c.Program, c.Threads)
		if seen[k] {
			continue
		}
		seen[k] = true
		g := goals(cells, c.Program, c.Threads)
		vals := []float64{g.vsXLA, g.vsIREE, g.untunedCompile, g.tunedCompile, g.warm}
		oks := []bool{g.vsXLA >= 1, g.vsIREE >= 1, g.untunedCompile >= 1, g.tunedCompile <= 3, g.warm >= 100}
		var cols []string
		for i, v := range vals {
			cols = append(cols, mark(v, oks[i]))
			if !math.IsNaN(v) {
				total++
				if oks[i] {
					met++
				}
				geo[i] += math.Log(v)
				geoN[i]++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", c.Program, c.Threads, strings.Join(cols, " | "))
	}
	gm := func(i int) string {
		if geoN[i] == 0 {
			return "n/a"
		}
		return ratio(math.Exp(geo[i] / float64(geoN[i])))
	}
	fmt.Fprintf(&b, "\nGoals met: **%d of %d**. Geometric means: run vs XLA:CPU %s, run vs IREE %s, untuned compile vs XLA:CPU %s, tuned compile ÷ XLA:CPU %s, warm start vs XLA:CPU compile %s.\n",
		met, total, gm(0), gm(1), gm(2), gm(3), gm(4))
	return b.String()
}

// machineLine names the machine, the load and the versions measured.
func machineLine(load string) string {
	model := "unknown CPU"
	if out, err := exec.Command("lscpu").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "Model name" {
				model = strings.TrimSpace(v)
			}
		}
	}
	ccv := "cc: unknown"
	if out, err := exec.Command("cc", "--version").Output(); err == nil {
		ccv, _, _ = strings.Cut(string(out), "\n")
	}
	return fmt.Sprintf("Machine: %s, %d CPUs (lscpu); load average %s. Versions: %s, %s, XLA:CPU from the PJRT plugin wheels of peers/pjrt-plugins.txt, IREE 3.13.0 (iree-base-compiler, iree-base-runtime; peers/iree-3.13.0.txt).",
		model, runtime.NumCPU(), load, runtime.Version(), ccv)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Markers around the generated parts of docs/cpu.md and README.md.
const (
	tableBegin   = "<!-- compilerbench:begin (generated by internal/compilerbench -update) -->"
	tableEnd     = "<!-- compilerbench:end -->"
	summaryBegin = "<!-- compilerbench-summary:begin (generated by internal/compilerbench -update) -->"
	summaryEnd   = "<!-- compilerbench-summary:end -->"
)

// updateDocs replaces the text between the markers.
func updateDocs(root, machine, table, summary string) error {
	cpuDoc := machine + "\n\n" + table + "\n### Goals (issue 23)\n\n" + summary
	if err := replaceBetween(filepath.Join(root, "docs", "cpu.md"), tableBegin, tableEnd, cpuDoc); err != nil {
		return err
	}
	_, last, _ := strings.Cut(summary, "\nGoals met:")
	readme := machine + "\n\nGoals met:" + strings.TrimRight(last, "\n") + " Full table and per-program goals: [docs/cpu.md](docs/cpu.md#against-xlacpu-and-iree).\n"
	return replaceBetween(filepath.Join(root, "README.md"), summaryBegin, summaryEnd, readme)
}

func replaceBetween(path, begin, end, body string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: markers %q … %q not found", path, begin, end)
	}
	s = s[:i+len(begin)] + "\n" + body + "\n" + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}
