package blobflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

const entry = "executables/k1"

func newFlight(t *testing.T, st blob.Store, logs *logtest.Buffer, mod func(*Options)) *Flight {
	t.Helper()
	o := Options{Store: st, Stale: 400 * time.Millisecond, Wait: 20 * time.Second, PollMin: time.Millisecond, PollMax: 10 * time.Millisecond}
	if logs != nil {
		o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if mod != nil {
		mod(&o)
	}
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// notReady is the local directory of a host that has no entry.
func notReady() bool { return false }

// Of several "hosts" (each its own Flight) that miss one entry at once,
// exactly one compiles; the others load its entry.
func TestOneCompilesOthersWait(t *testing.T) {
	st := memblob.New(memblob.Options{})
	var compiles, loads atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		f := newFlight(t, st, nil, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := f.Acquire(context.Background(), entry, notReady)
			if err != nil {
				t.Error(err)
				return
			}
			if release == nil {
				if _, err := st.Get(context.Background(), entry); err != nil {
					t.Errorf("told the entry is ready, but: %v", err)
				}
				loads.Add(1)
				return
			}
			compiles.Add(1)
			time.Sleep(50 * time.Millisecond) // the compile
			if err := st.PutIfAbsent(context.Background(), entry, []byte("exe")); err != nil {
				t.Error(err)
			}
			release()
		}()
	}
	wg.Wait()
	if compiles.Load() != 1 || loads.Load() != 5 {
		t.Fatalf("%d compiles and %d loads, want 1 and 5", compiles.Load(), loads.Load())
	}
	if left := leaseObjects(t, st); len(left) != 0 {
		t.Fatalf("leases or probe objects left behind: %v", left)
	}
}

// A lease whose heartbeat has stopped (its holder died) is taken over
// after Stale, and only then.
func TestTakeoverOfDeadHolder(t *testing.T) {
	st := memblob.New(memblob.Options{})
	ctx := context.Background()
	dead := record{Host: "elsewhere", PID: 1, Token: "dead", Name: entry}
	if err := st.PutIfAbsent(ctx, LeaseName(entry), dead.bytes()); err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	f := newFlight(t, st, &logs, nil)
	start := time.Now()
	release, err := f.Acquire(ctx, entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("Acquire = %v, %v; want the lease", release == nil, err)
	}
	if waited := time.Since(start); waited < f.opts.Stale {
		t.Fatalf("took over after %v, before the stale interval %v", waited, f.opts.Stale)
	}
	data, err := st.Get(ctx, LeaseName(entry))
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if json.Unmarshal(data, &r) != nil || r.Token == "dead" {
		t.Fatalf("lease after takeover: %s", data)
	}
	release()
	if _, err := st.Stat(ctx, LeaseName(entry)); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("lease after release: %v", err)
	}
	if n := strings.Count(logs.String(), "took over a stale lease"); n != 1 {
		t.Fatalf("%d takeover lines:\n%s", n, logs.String())
	}
}

// A live holder's heartbeat keeps waiters from taking over even when it
// holds the lease for many stale intervals: the waiter's bounded wait runs
// out and it compiles by itself, leaving the lease alone.
func TestLiveHolderNotTakenOver(t *testing.T) {
	st := memblob.New(memblob.Options{})
	ctx := context.Background()
	holder := newFlight(t, st, nil, func(o *Options) { o.Stale = time.Second })
	release, err := holder.Acquire(ctx, entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("holder: %v %v", release == nil, err)
	}
	var logs logtest.Buffer
	waiter := newFlight(t, st, &logs, func(o *Options) { o.Stale = time.Second; o.Wait = 3 * time.Second })
	wrel, err := waiter.Acquire(ctx, entry, notReady)
	if err != nil || wrel == nil {
		t.Fatalf("waiter: %v %v", wrel == nil, err)
	}
	wrel()
	if !strings.Contains(logs.String(), "waited too long") || strings.Contains(logs.String(), "took over") {
		t.Fatalf("waiter log:\n%s", logs.String())
	}
	release()
	// Had the waiter taken over, the holder's release would have left
	// the waiter's lease in place.
	if _, err := st.Stat(ctx, LeaseName(entry)); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("lease after the holder's release: %v", err)
	}
}

// Of several waiters that find the same stale lease, exactly one takes it
// over.
func TestOneTakerWins(t *testing.T) {
	st := memblob.New(memblob.Options{})
	ctx := context.Background()
	if err := st.PutIfAbsent(ctx, LeaseName(entry), record{Token: "dead"}.bytes()); err != nil {
		t.Fatal(err)
	}
	var compiles atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		f := newFlight(t, st, nil, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := f.Acquire(ctx, entry, notReady)
			if err != nil {
				t.Error(err)
				return
			}
			if release != nil {
				compiles.Add(1)
				st.PutIfAbsent(ctx, entry, []byte("exe"))
				release()
			}
		}()
	}
	wg.Wait()
	if compiles.Load() != 1 {
		t.Fatalf("%d compiles after a takeover race, want 1", compiles.Load())
	}
}

// A reader never creates a lease object: with none in the store it waits
// its short grace and compiles; with a writer's live lease it waits for
// the writer's entry.
func TestReaderNeverClaims(t *testing.T) {
	st := memblob.New(memblob.Options{})
	ctx := context.Background()
	reader := newFlight(t, st, nil, func(o *Options) { o.NoClaim = true; o.ReaderGrace = 50 * time.Millisecond })
	release, err := reader.Acquire(ctx, entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("reader without a writer: %v %v", release == nil, err)
	}
	release()
	if n := st.Calls("put") + st.Calls("replace") + st.Calls("delete"); n != 0 {
		t.Fatalf("a reader wrote to the store %d times", n)
	}

	writer := newFlight(t, st, nil, nil)
	wrel, err := writer.Acquire(ctx, entry, notReady)
	if err != nil || wrel == nil {
		t.Fatalf("writer: %v %v", wrel == nil, err)
	}
	puts := st.Calls("put")
	reader = newFlight(t, st, nil, func(o *Options) { o.NoClaim = true })
	done := make(chan bool)
	go func() {
		r, err := reader.Acquire(ctx, entry, notReady)
		done <- r == nil && err == nil
	}()
	// The writer publishes once the reader is waiting on its lease.
	for stats := st.Calls("stat"); st.Calls("stat") < stats+6; {
		time.Sleep(time.Millisecond)
	}
	st.PutIfAbsent(ctx, entry, []byte("exe"))
	wrel()
	if !<-done {
		t.Fatal("the reader did not get the writer's entry")
	}
	if st.Calls("put") != puts+1 {
		t.Fatalf("puts: %d, want %d (the entry only)", st.Calls("put"), puts+1)
	}
}

// noIfNoneMatch is a store that ignores If-None-Match: PutIfAbsent
// overwrites.
type noIfNoneMatch struct{ *memblob.Store }

func (s noIfNoneMatch) String() string { return "no-if-none-match" }

func (s noIfNoneMatch) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.PutRaw(name, data)
	return nil
}

// ifMatchCreates is a store that creates a missing object on If-Match.
type ifMatchCreates struct{ *memblob.Store }

func (s ifMatchCreates) String() string { return "if-match-creates" }

func (s ifMatchCreates) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	if _, err := s.Stat(ctx, name); errors.Is(err, blob.ErrNotExist) {
		s.PutRaw(name, data)
		i, err := s.Stat(ctx, name)
		return i.ETag, err
	}
	return s.Store.ReplaceIfMatch(ctx, name, etag, data)
}

func TestProbe(t *testing.T) {
	ctx := context.Background()
	if err := Probe(ctx, memblob.New(memblob.Options{})); err != nil {
		t.Fatalf("memblob: %v", err)
	}
	var bad *UnsupportedError
	err := Probe(ctx, noIfNoneMatch{memblob.New(memblob.Options{})})
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "If-None-Match") {
		t.Fatalf("store ignoring If-None-Match: %v", err)
	}
	err = Probe(ctx, ifMatchCreates{memblob.New(memblob.Options{})})
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "missing object") {
		t.Fatalf("store creating on If-Match: %v", err)
	}
	down := memblob.New(memblob.Options{})
	down.SetUnavailable(true, nil)
	if err := Probe(ctx, down); err == nil || errors.As(err, &bad) {
		t.Fatalf("store down: %v, want a store error", err)
	}
	st := memblob.New(memblob.Options{})
	Probe(ctx, st)
	if st.Len() != 0 {
		t.Fatalf("the probe left %d objects", st.Len())
	}
}

// Where the probe fails, leases are off with one log line: every Acquire
// returns at once for the caller to compile, and no lease object is made.
func TestProbeOffOneLine(t *testing.T) {
	st := noIfNoneMatch{memblob.New(memblob.Options{})}
	// The answer is per process: forget earlier runs' (-count).
	probes.Delete(st.String())
	var logs logtest.Buffer
	f := newFlight(t, st, &logs, nil)
	g := newFlight(t, st, &logs, nil) // a second cache of the process on the same bucket
	for i := 0; i < 3; i++ {
		for _, fl := range []*Flight{f, g} {
			release, err := fl.Acquire(context.Background(), fmt.Sprintf("executables/k%d", i), notReady)
			if err != nil || release == nil {
				t.Fatalf("Acquire: %v %v", release == nil, err)
			}
			release()
		}
	}
	if n := strings.Count(logs.String(), "does not honour conditional writes"); n != 1 {
		t.Fatalf("%d probe lines, want 1:\n%s", n, logs.String())
	}
	if infos, _ := st.List(context.Background(), ""); len(infos) != 0 {
		t.Fatalf("objects left: %v", infos)
	}
}

// failingStat fails every Stat with an error that is not an outage.
type failingStat struct{ *memblob.Store }

func (s failingStat) String() string { return "failing-stat" }

func (s failingStat) Stat(ctx context.Context, name string) (blob.Info, error) {
	if strings.HasPrefix(name, layout.ProbePrefix) {
		return s.Store.Stat(ctx, name)
	}
	return blob.Info{}, errors.New("access denied")
}

// A store that fails ends the wait at once, with one log line per kind of
// failure however many misses meet it; one that is down costs no line of
// its own (its Guard logs the outage).
func TestStoreFailureDegrades(t *testing.T) {
	var logs logtest.Buffer
	probes.Delete(failingStat{}.String())
	f := newFlight(t, failingStat{memblob.New(memblob.Options{})}, &logs, nil)
	for i := 0; i < 3; i++ {
		release, err := f.Acquire(context.Background(), entry, notReady)
		if err != nil || release == nil {
			t.Fatalf("Acquire: %v %v", release == nil, err)
		}
		release()
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines, want 1:\n%s", n, logs.String())
	}

	down := memblob.New(memblob.Options{})
	down.SetUnavailable(true, nil)
	logs = logtest.Buffer{}
	f = newFlight(t, down, &logs, func(o *Options) { o.NoProbe = true })
	release, err := f.Acquire(context.Background(), entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("Acquire on a store that is down: %v %v", release == nil, err)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("WARN for an outage the guard reports:\n%s", logs.String())
	}
}

// A cancelled context ends a wait with its error.
func TestAcquireCancelled(t *testing.T) {
	st := memblob.New(memblob.Options{})
	holder := newFlight(t, st, nil, nil)
	release, _ := holder.Acquire(context.Background(), entry, notReady)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	f := newFlight(t, st, nil, nil)
	go func() {
		for st.Calls("stat") < 20 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := f.Acquire(ctx, entry, notReady); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire after cancel: %v", err)
	}
}

// A heartbeat whose answer was lost (the write landed, the reply did not)
// does not lose the lease: the holder finds its own record there.
func TestHeartbeatAfterLostAnswer(t *testing.T) {
	st := memblob.New(memblob.Options{})
	f := newFlight(t, st, nil, func(o *Options) { o.NoProbe = true })
	ctx := context.Background()
	release, err := f.Acquire(ctx, entry, notReady)
	if err != nil || release == nil {
		t.Fatal(err)
	}
	defer release()
	// Rewrite the holder's own record behind its back, as its lost beat
	// would have.
	data, _ := st.Get(ctx, LeaseName(entry))
	var r record
	json.Unmarshal(data, &r)
	r.Beat = 99
	st.PutRaw(LeaseName(entry), r.bytes())
	// beat is called directly: false means lost (the heartbeat then
	// ends and Lost reports it).
	l := &Lease{f: f, name: LeaseName(entry), rec: r, etag: "stale-etag"}
	if !l.beat() {
		t.Fatal("a beat after a lost answer lost the lease")
	}
	r.Token = "someone else"
	st.PutRaw(LeaseName(entry), r.bytes())
	if l.beat() {
		t.Fatal("a lease taken by another host was kept")
	}
}

// FuzzParseRecord: any bytes in a lease object are parsed without panic,
// and a record this package writes parses back to itself.
func FuzzParseRecord(f *testing.F) {
	f.Add(record{Host: "h", PID: 7, Token: "t", Name: entry, Beat: 3}.bytes())
	f.Add([]byte(""))
	f.Add([]byte("{}"))
	f.Add([]byte(`{"token":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseRecord(data)
		if err != nil {
			return
		}
		if r.Token == "" {
			t.Fatal("a record without a token parsed")
		}
		back, err := parseRecord(r.bytes())
		if err != nil || back.Token != r.Token || back.Beat != r.Beat {
			t.Fatalf("round trip: %+v -> %+v, %v", r, back, err)
		}
	})
}

// An entry object already there at the first look is the one the caller
// has just refused (damaged, too large): it does not count as ready, so
// the caller claims and its compile repairs it; a different object (a
// repair by another host) does.
func TestRefusedObjectIsNotReady(t *testing.T) {
	st := memblob.New(memblob.Options{})
	ctx := context.Background()
	st.PutRaw(entry, []byte("damaged"))
	f := newFlight(t, st, nil, nil)
	release, err := f.Acquire(ctx, entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("Acquire with a refused object in place: ready=%v, %v", release == nil, err)
	}
	if _, err := st.Stat(ctx, LeaseName(entry)); err != nil {
		t.Fatalf("no lease claimed: %v", err)
	}
	g := newFlight(t, st, nil, nil)
	done := make(chan bool)
	go func() {
		r, err := g.Acquire(ctx, entry, notReady)
		done <- r == nil && err == nil
	}()
	for stats := st.Calls("stat"); st.Calls("stat") < stats+4; {
		time.Sleep(time.Millisecond)
	}
	info, _ := st.Stat(ctx, entry)
	if _, err := st.ReplaceIfMatch(ctx, entry, info.ETag, []byte("repaired")); err != nil {
		t.Fatal(err)
	}
	release()
	if !<-done {
		t.Fatal("a waiter did not take the repaired object as ready")
	}
}

// A writer whose cache turned out read-only stops claiming: it then
// behaves as a reader and writes nothing to the store (no probe, no
// lease).
func TestStopClaiming(t *testing.T) {
	st := memblob.New(memblob.Options{})
	f := newFlight(t, st, nil, func(o *Options) { o.ReaderGrace = 20 * time.Millisecond })
	f.StopClaiming()
	for i := range 2 {
		release, err := f.Acquire(context.Background(), fmt.Sprintf("executables/k%d", i), notReady)
		if err != nil || release == nil {
			t.Fatalf("Acquire: %v %v", release == nil, err)
		}
		release()
	}
	if n := st.Calls("put") + st.Calls("replace") + st.Calls("delete"); n != 0 {
		t.Fatalf("a flight that stopped claiming wrote to the store %d times", n)
	}
}

// slowProbe blocks the probe's first write until gate is closed or the
// call's context ends, and reports on started when it is blocked.
type slowProbe struct {
	*memblob.Store
	name    string
	started chan struct{}
	gate    chan struct{}
	once    *sync.Once
}

func (s slowProbe) String() string { return s.name }

func (s slowProbe) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if strings.HasPrefix(name, layout.ProbePrefix) {
		s.once.Do(func() { close(s.started) })
		select {
		case <-s.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.Store.PutIfAbsent(ctx, name, data)
}

// A caller waiting for another caller's probe gives up when its context
// ends; a probe cut short by its caller's context does not turn leases
// off for the retry interval: the next caller probes again.
func TestProbeWaitHonoursContext(t *testing.T) {
	st := slowProbe{Store: memblob.New(memblob.Options{}), name: "slow-probe-" + newToken(),
		started: make(chan struct{}), gate: make(chan struct{}), once: new(sync.Once)}
	f := newFlight(t, st, nil, nil)

	// The first caller's probe blocks; it is cancelled while blocked.
	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := f.Acquire(ctx1, entry, notReady)
		first <- err
	}()
	<-st.started
	// A second caller waits for that probe and gives up with its context.
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := f.Acquire(ctx2, entry, notReady)
		second <- err
	}()
	cancel2()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("second caller: %v, want context.Canceled", err)
	}
	cancel1()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("first caller: %v, want context.Canceled", err)
	}
	// The store never failed: the next caller probes and gets a lease.
	close(st.gate)
	release, err := f.Acquire(context.Background(), entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("Acquire after the cancelled probe: %v %v", release == nil, err)
	}
	if _, err := st.Stat(context.Background(), LeaseName(entry)); err != nil {
		t.Fatalf("no lease after a probe that succeeded: %v", err)
	}
	release()
	if infos, _ := st.List(context.Background(), ""); len(infos) != 0 {
		t.Fatalf("objects left: %v", infos)
	}
}

// A holder whose lease was taken over (its heartbeat had not noticed yet)
// leaves the taker's lease alone when it releases.
func TestReleaseAfterTakeoverKeepsTakersLease(t *testing.T) {
	st := memblob.New(memblob.Options{})
	ctx := context.Background()
	holder := newFlight(t, st, nil, func(o *Options) { o.Stale = time.Hour })
	release, err := holder.Acquire(ctx, entry, notReady)
	if err != nil || release == nil {
		t.Fatalf("holder: %v %v", release == nil, err)
	}
	info, err := st.Stat(ctx, LeaseName(entry))
	if err != nil {
		t.Fatal(err)
	}
	taker := record{Host: "elsewhere", PID: 2, Token: "taker", Name: entry}
	if _, err := st.ReplaceIfMatch(ctx, LeaseName(entry), info.ETag, taker.bytes()); err != nil {
		t.Fatal(err)
	}
	release()
	data, err := st.Get(ctx, LeaseName(entry))
	if err != nil {
		t.Fatalf("the holder's release removed the taker's lease: %v", err)
	}
	if r, err := parseRecord(data); err != nil || r.Token != "taker" {
		t.Fatalf("lease after the old holder's release: %s (%v)", data, err)
	}
}

// leaseObjects lists the lease and probe objects in st.
func leaseObjects(t *testing.T, st blob.Store) []string {
	t.Helper()
	infos, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		if layout.IsLeaseObject(in.Name) {
			names = append(names, in.Name)
		}
	}
	return names
}
