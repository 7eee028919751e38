package pollwait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWithDefaults(t *testing.T) {
	def := Timing{Stale: 30 * time.Second, Wait: 2 * time.Minute, ReaderGrace: 2 * time.Second, PollMin: 5 * time.Millisecond, PollMax: 100 * time.Millisecond}
	got, err := Timing{}.WithDefaults(def)
	if err != nil {
		t.Fatal(err)
	}
	want := def
	want.Heartbeat = def.Stale / 4
	if got != want {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}
	// ReaderGrace is capped at a positive Wait; a PollMax below PollMin is
	// raised; a negative Wait (do not wait) stays.
	got, err = Timing{Stale: time.Second, Wait: 100 * time.Millisecond, PollMin: 300 * time.Millisecond, PollMax: time.Millisecond}.WithDefaults(def)
	if err != nil {
		t.Fatal(err)
	}
	if got.ReaderGrace != 100*time.Millisecond || got.PollMax != 300*time.Millisecond || got.Heartbeat != 250*time.Millisecond {
		t.Errorf("capped: got %+v", got)
	}
	if got, _ := (Timing{Wait: -1}).WithDefaults(def); got.Wait != -1 || got.ReaderGrace != def.ReaderGrace {
		t.Errorf("negative wait: got %+v", got)
	}
	if _, err := (Timing{Stale: time.Second, Heartbeat: time.Second}).WithDefaults(def); err == nil {
		t.Error("a heartbeat as long as the stale timeout was accepted")
	}
}

func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 3, time.Millisecond, time.Second} {
		for range 50 {
			if j := Jitter(d); j < d/2 || j > d {
				t.Fatalf("Jitter(%v) = %v, want within [%v, %v]", d, j, d/2, d)
			}
		}
	}
}

func TestSleepHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with a cancelled context: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
}

// A process stops granting reader grace periods after FruitlessGraces in
// a row found nobody claiming, and grants them again after a useful one.
func TestGraces(t *testing.T) {
	var g Graces
	for i := 0; i < FruitlessGraces; i++ {
		if g.Exhausted() {
			t.Fatalf("exhausted after %d fruitless graces", i)
		}
		g.Outcome(false)
	}
	if !g.Exhausted() {
		t.Fatalf("not exhausted after %d fruitless graces", FruitlessGraces)
	}
	g.Outcome(true)
	if g.Exhausted() {
		t.Fatal("still exhausted after a useful grace")
	}
}
