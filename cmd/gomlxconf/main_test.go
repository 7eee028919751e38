package main

import (
	"strings"
	"testing"
)

const sampleJSON = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"ok\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestB/sub"}
{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    Error: xlacache backend: op FFT is not supported\n"}
{"Action":"fail","Package":"p","Test":"TestB/sub"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"run","Package":"p","Test":"TestD"}
{"Action":"output","Package":"p","Test":"TestD","Output":"panic: boom\n"}
not json
{"Action":"fail","Package":"p"}
`

func TestParseJSON(t *testing.T) {
	got := parseJSON([]byte(sampleJSON))
	want := map[string]outcome{
		"TestA": {action: "pass"},
		"TestB": {action: "fail", reason: "xlacache backend: op FFT is not supported"},
		"TestC": {action: "skip"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v (TestD crashed: no result)", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
}

func TestCheck(t *testing.T) {
	all := map[string]map[string]outcome{"p": {
		"TestOK": {action: "pass"}, "TestNew": {action: "fail", reason: "r"},
		"TestListed": {action: "fail"}, "TestFixed": {action: "pass"},
	}}
	exp, err := parseExpected([]byte("# comment\np TestListed  # why\np TestFixed # was broken\np TestGone\nq TestOther\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(check(all, exp), "\n")
	for _, want := range []string{"UNEXPECTED FAILURE p TestNew", "LISTED BUT PASSES p TestFixed", "LISTED BUT MISSING p TestGone"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestListed") || strings.Contains(got, "TestOther") || strings.Contains(got, "TestOK") {
		t.Errorf("unexpected problems:\n%s", got)
	}
	if s := summary(all["p"]); s != "2 passed, 2 failed, 0 skipped of 4 (50% of those run pass)" {
		t.Errorf("summary %q", s)
	}
}

func TestParseExpectedErrors(t *testing.T) {
	for _, bad := range []string{"onlyone\n", "a b c  # three fields\n"} {
		if _, err := parseExpected([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// The list written by -update reads back.
	all := map[string]map[string]outcome{"p": {"TestX": {action: "fail", reason: "op FFT"}}}
	exp, err := parseExpected(formatExpected(all, map[string]string{"p TestNet": "skip: network"}))
	if err != nil || exp["p TestX"] != "op FFT" || exp["p TestNet"] != "skip: network" {
		t.Errorf("round trip: %v %v", exp, err)
	}
}

// FuzzParse feeds both parsers arbitrary text: neither may panic, and an
// accepted list has two-field keys.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sampleJSON))
	f.Add([]byte("p TestA  # reason\n# c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseJSON(data)
		exp, err := parseExpected(data)
		if err != nil {
			return
		}
		for k := range exp {
			if len(strings.Fields(k)) != 2 {
				t.Errorf("key %q", k)
			}
		}
	})
}
