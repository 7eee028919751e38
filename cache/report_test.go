package cache

import (
	"reflect"
	"testing"
)

func TestPhaseTotals(t *testing.T) {
	r := &Report{Phases: []Phase{{"key", 1}, {"codegen", 2}, {"autotune", 3}, {"codegen", 4}, {"key", 5}}}
	want := []Phase{{"key", 6}, {"codegen", 6}, {"autotune", 3}}
	if got := r.PhaseTotals(); !reflect.DeepEqual(got, want) {
		t.Fatalf("PhaseTotals = %v, want %v", got, want)
	}
	if got := (&Report{}).PhaseTotals(); len(got) != 0 {
		t.Fatalf("PhaseTotals of no phases = %v", got)
	}
}

func TestPhaseTime(t *testing.T) {
	r := &Report{Phases: []Phase{{"load", 2}, {"key", 1}, {"load", 3}}}
	if got := r.PhaseTime("load"); got != 5 {
		t.Fatalf("PhaseTime(load) = %v, want 5", got)
	}
	if got := r.PhaseTime("absent"); got != 0 {
		t.Fatalf("PhaseTime(absent) = %v", got)
	}
}
