// Command gomlxconf runs GoMLX's own test packages against the xlacache
// GoMLX backend and compares the outcome with a committed list of tests
// expected to fail. .ci/gomlx-conformance prepares the workspace (a copy of
// the gomlx module linking backend/gomlx) and runs it.
//
// A test binary that panics loses every test after the panicking one, so
// each package is run again without the tests that already have a result
// until every listed test has one.
//
// It fails when a test not on the list fails, or a listed test passes; it
// prints "N passed, N failed" per package.
//
//	go run ./cmd/gomlxconf -C /tmp/ws/gomlx -expected .ci/gomlx-expected-failures.txt -- ./pkg/core/graph ...
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

func main() {
	dir := flag.String("C", ".", "directory of the gomlx module copy to test in")
	expected := flag.String("expected", "", "file listing the tests expected to fail")
	update := flag.Bool("update", false, "rewrite the expected-failures file from this run instead of checking")
	execWrap := flag.String("exec", "", "go test -exec value (the HOME placeholder)")
	timeout := flag.Duration("timeout", 20*time.Minute, "go test -timeout per run")
	shortUnder := flag.String("short-under", "", "run packages under this path prefix with -short (GoMLX's examples download data otherwise)")
	flag.Parse()
	o := options{dir: *dir, execWrap: *execWrap, timeout: *timeout, shortUnder: *shortUnder}
	if err := run(context.Background(), os.Stdout, o, *expected, *update, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "gomlxconf:", err)
		os.Exit(1)
	}
}

// outcome of one top-level test.
type outcome struct {
	action string // pass, fail, skip
	reason string // for failures: the first line naming what the backend lacks
}

// options say how to run go test.
type options struct {
	dir, execWrap, shortUnder string
	timeout                   time.Duration
	// skip are the tests listed with a "skip:" reason (they need the
	// network, say), by package; they are not run.
	skip map[string][]string
}

func run(ctx context.Context, out io.Writer, o options, expectedPath string, update bool, pkgs []string) error {
	if len(pkgs) == 0 {
		return errors.New("no packages")
	}
	expected := map[string]string{} // "pkg Test" -> reason
	data, err := os.ReadFile(expectedPath)
	switch {
	case err == nil:
		if expected, err = parseExpected(data); err != nil {
			return fmt.Errorf("%s: %w", expectedPath, err)
		}
	case !update || !errors.Is(err, os.ErrNotExist):
		return err
	}
	o.skip = map[string][]string{}
	skipped := map[string]string{}
	for key, reason := range expected {
		if strings.HasPrefix(reason, "skip:") {
			pkg, test, _ := strings.Cut(key, " ")
			o.skip[pkg] = append(o.skip[pkg], test)
			skipped[key] = reason
			delete(expected, key)
		}
	}
	all := map[string]map[string]outcome{}
	for _, pkg := range pkgs {
		start := time.Now()
		res, err := runPackage(ctx, o, pkg)
		if err != nil {
			return fmt.Errorf("%s: %w", pkg, err)
		}
		all[pkg] = res
		fmt.Fprintf(out, "%-40s %s (%.0fs)\n", pkg, summary(res), time.Since(start).Seconds())
	}
	if update {
		// Listed reasons (written by hand) win over the detected ones.
		for pkg, res := range all {
			for test, r := range res {
				if reason, ok := expected[pkg+" "+test]; ok && r.action == "fail" {
					r.reason = reason
					res[test] = r
				}
			}
		}
		return os.WriteFile(expectedPath, formatExpected(all, skipped), 0o644)
	}
	problems := check(all, expected)
	for _, p := range problems {
		fmt.Fprintln(out, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d unexpected results (a listed test that passes must leave %s)", len(problems), expectedPath)
	}
	return nil
}

func summary(res map[string]outcome) string {
	n := map[string]int{}
	for _, o := range res {
		n[o.action]++
	}
	pct := "-"
	if ran := n["pass"] + n["fail"]; ran > 0 {
		pct = fmt.Sprintf("%.0f%%", 100*float64(n["pass"])/float64(ran))
	}
	return fmt.Sprintf("%d passed, %d failed, %d skipped of %d (%s of those run pass)", n["pass"], n["fail"], n["skip"], len(res), pct)
}

// check compares results with the expected failures.
func check(all map[string]map[string]outcome, expected map[string]string) []string {
	var problems []string
	for pkg, res := range all {
		for test, o := range res {
			key := pkg + " " + test
			_, listed := expected[key]
			switch {
			case o.action == "fail" && !listed:
				problems = append(problems, fmt.Sprintf("UNEXPECTED FAILURE %s: %s", key, o.reason))
			case o.action == "pass" && listed:
				problems = append(problems, fmt.Sprintf("LISTED BUT PASSES %s (remove it from the list)", key))
			}
		}
	}
	for key := range expected {
		pkg, test, _ := strings.Cut(key, " ")
		if res, ok := all[pkg]; ok {
			if _, ran := res[test]; !ran {
				problems = append(problems, fmt.Sprintf("LISTED BUT MISSING %s (no such test)", key))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// parseExpected reads lines "pkg TestName  # reason".
func parseExpected(data []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		body, reason, _ := strings.Cut(line, "#")
		f := strings.Fields(body)
		switch {
		case len(f) == 0:
			continue
		case len(f) != 2:
			return nil, fmt.Errorf("line %d: want \"package TestName  # reason\", got %q", i+1, line)
		}
		out[f[0]+" "+f[1]] = strings.TrimSpace(reason)
	}
	return out, nil
}

func formatExpected(all map[string]map[string]outcome, skipped map[string]string) []byte {
	var b bytes.Buffer
	b.WriteString("# GoMLX tests expected to fail on the xlacache backend: package TestName  # what is missing\n")
	b.WriteString("# Written by .ci/gomlx-conformance -update; a test that starts passing must be removed.\n")
	var lines []string
	for key, reason := range skipped {
		lines = append(lines, fmt.Sprintf("%s  # %s", key, reason))
	}
	for pkg, res := range all {
		for test, o := range res {
			if o.action == "fail" {
				lines = append(lines, fmt.Sprintf("%s %s  # %s", pkg, test, o.reason))
			}
		}
	}
	sort.Strings(lines)
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n")
	return b.Bytes()
}

var testName = regexp.MustCompile(`^(Test|Example)[A-Za-z0-9_]*$`)

// runPackage runs pkg's tests until every top-level test has an outcome.
func runPackage(ctx context.Context, o options, pkg string) (map[string]outcome, error) {
	var extra []string
	if o.shortUnder != "" && strings.HasPrefix(pkg, o.shortUnder) {
		extra = append(extra, "-short")
	}
	listing, err := goTest(ctx, o, append(extra, "-list", ".", pkg)...)
	if err != nil {
		return nil, fmt.Errorf("listing tests: %w\n%s", err, listing)
	}
	var remaining []string
	for _, l := range strings.Split(string(listing), "\n") {
		if l = strings.TrimSpace(l); testName.MatchString(l) && !slices.Contains(o.skip[pkg], l) {
			remaining = append(remaining, l)
		}
	}
	res := map[string]outcome{}
	for len(remaining) > 0 {
		pattern := "^(" + strings.Join(remaining, "|") + ")$"
		raw, _ := goTest(ctx, o, append(extra, "-json", "-run", pattern, pkg)...) // failures are in the JSON
		got := parseJSON(raw)
		for test, o := range got {
			res[test] = o
		}
		next := slices.DeleteFunc(slices.Clone(remaining), func(t string) bool { _, ok := got[t]; return ok })
		if len(next) == len(remaining) {
			// Nothing reported: the binary died before any test (or the
			// build failed); record them all as failed, with why.
			why := firstLine(raw)
			for _, t := range next {
				res[t] = outcome{action: "fail", reason: "no result: " + why}
			}
			break
		}
		remaining = next
	}
	return res, nil
}

func firstLine(raw []byte) string {
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "{") {
			return l
		}
	}
	return "test binary exited"
}

func goTest(ctx context.Context, o options, args ...string) ([]byte, error) {
	a := []string{"test", "-count=1", "-timeout", o.timeout.String()}
	if o.execWrap != "" {
		a = append(a, "-exec", o.execWrap)
	}
	cmd := exec.CommandContext(ctx, "go", append(a, args...)...)
	cmd.Dir = o.dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.Bytes(), err
}

// reasonRE finds the line saying what the backend lacks.
var reasonRE = regexp.MustCompile(`xlacache backend: .*`)

// parseJSON reads go test -json output into top-level test outcomes.
func parseJSON(raw []byte) map[string]outcome {
	res := map[string]outcome{}
	reasons := map[string]string{}
	firstErr := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e struct{ Action, Test, Output string }
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		switch e.Action {
		case "output":
			if m := reasonRE.FindString(e.Output); m != "" && reasons[top] == "" {
				reasons[top] = strings.TrimSpace(m)
			}
			if l := strings.TrimSpace(e.Output); firstErr[top] == "" && (strings.Contains(l, "Error:") || strings.HasPrefix(l, "panic:")) {
				firstErr[top] = l
			}
		case "pass", "fail", "skip":
			if top == e.Test {
				res[top] = outcome{action: e.Action}
			}
		}
	}
	for t, o := range res {
		if o.action == "fail" {
			o.reason = reasons[t]
			if o.reason == "" {
				o.reason = firstErr[t]
			}
			if o.reason == "" {
				o.reason = "failed (see the test's output)"
			}
			res[t] = o
		}
	}
	return res
}
