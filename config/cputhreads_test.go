package config

import (
	"runtime"
	"strings"
	"testing"
)

func TestCPUThreads(t *testing.T) {
	want := affinityCPUs()
	if want == 0 {
		want = runtime.NumCPU()
	}
	if got := DefaultCPUThreads(); got != want {
		t.Errorf("DefaultCPUThreads() = %d, want the %d CPUs of the affinity mask", got, want)
	}
	o, err := FromEnv(lookupMap(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if o.CPUThreads != 0 || o.EffectiveCPUThreads() != DefaultCPUThreads() || o.Sources[EnvCPUThreads] != SourceDefault {
		t.Errorf("unset: CPUThreads %d, effective %d, source %q", o.CPUThreads, o.EffectiveCPUThreads(), o.Sources[EnvCPUThreads])
	}
	o, err = FromEnv(lookupMap(map[string]string{EnvCPUThreads: " 3 "}))
	if err != nil {
		t.Fatal(err)
	}
	if o.CPUThreads != 3 || o.EffectiveCPUThreads() != 3 || o.Sources[EnvCPUThreads] != SourceEnv {
		t.Errorf("3: CPUThreads %d, effective %d, source %q", o.CPUThreads, o.EffectiveCPUThreads(), o.Sources[EnvCPUThreads])
	}
	if err := o.Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
	for _, bad := range []string{"0", "-2", "two", "1.5", "1025", "99999999999999999999"} {
		_, err := FromEnv(lookupMap(map[string]string{EnvCPUThreads: bad}))
		if err == nil || !strings.Contains(err.Error(), EnvCPUThreads) {
			t.Errorf("%s=%q: %v, want an error naming the variable", EnvCPUThreads, bad, err)
		}
		if _, err := CPUThreadsFromEnv(lookupMap(map[string]string{EnvCPUThreads: bad})); err == nil || !strings.Contains(err.Error(), EnvCPUThreads) {
			t.Errorf("CPUThreadsFromEnv %q: %v, want an error naming the variable", bad, err)
		}
	}
	if n, err := CPUThreadsFromEnv(lookupMap(map[string]string{EnvCPUThreads: "2"})); n != 2 || err != nil {
		t.Errorf("CPUThreadsFromEnv 2 = %d, %v", n, err)
	}
	if n, err := CPUThreadsFromEnv(lookupMap(map[string]string{EnvCPUThreads: ""})); n != DefaultCPUThreads() || err != nil {
		t.Errorf("CPUThreadsFromEnv empty = %d, %v", n, err)
	}
	if err := (Options{CPUThreads: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "CPUThreads") {
		t.Errorf("Validate(CPUThreads -1) = %v", err)
	}
}
