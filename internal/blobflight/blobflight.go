// Package blobflight implements single-flight compilation across hosts that
// share nothing but an object store (cache.Flight over a blob.Store): of the
// hosts that miss one shared entry at once, one compiles and publishes it,
// and the others wait for its object and load it.
//
// A claim is a lease object (layout.LeaseObject: "lease.<tier>.<key>",
// flat, in no directory of its own: see internal/layout's bucket.go for
// why) created with a conditional create (blob.Store.PutIfAbsent: If-None-Match: *), so of two
// hosts that miss at once exactly one creates it. The holder proves it is
// alive by rewriting the object with a conditional overwrite on its own
// last ETag (ReplaceIfMatch: If-Match) every Heartbeat, each time with a
// new beat count, so the ETag changes with every beat. A waiter watches
// the lease's ETag and measures on its own monotonic clock how long it has
// stayed the same; after Stale it takes the lease over with a conditional
// overwrite on that stale ETag, so of several takers exactly one wins and
// the lease never disappears during a takeover. No timestamp written by
// another host is compared with this host's clock. Releasing deletes the
// lease object after checking that its ETag is still the holder's (the
// store interface has no conditional delete; the window between the check
// and the delete can cost one duplicate compile, never a wrong result).
//
// Nothing waits forever: a wait is bounded by Options.Wait
// (XLACACHE_WAIT_SECS), a store error ends the wait at once (the caller
// compiles, after one log line per kind of failure), and a reader never
// creates a lease object, it only waits for a writer's entry. Publishing
// stays first-writer-wins and every entry read from the store is verified
// by the cache, so a lease protocol that fails costs duplicate compiles,
// never a wrong result.
//
// S3-compatible servers differ in how they honour conditional writes, so
// before the first claim a writer probes the store (Probe) on a scratch
// object (layout.ProbeObject); where a semantic the leases rely on does
// not hold, lease-based single-flight is off for the process after one log
// line. The answer is remembered per store for the process.
package blobflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/logonce"
	"github.com/xlacache/xlacache/internal/pollwait"
	"github.com/xlacache/xlacache/internal/sign"
)

// defaults are the timing options' defaults (Options fields left zero):
// every look of a waiter is two requests (a HEAD of the entry and of the
// lease), so it polls less often than a directory's.
var defaults = pollwait.Defaults(20*time.Millisecond, 250*time.Millisecond)

// Options configures a Flight.
type Options struct {
	// Store is the shared store, normally behind blob.Guard so that every
	// call is bounded in time.
	Store blob.Store
	// Stale is how long an unchanged heartbeat makes a lease stale
	// (default pollwait.DefaultStale).
	Stale time.Duration
	// Heartbeat is how often a holder rewrites its lease (default Stale/4).
	Heartbeat time.Duration
	// Wait bounds how long Acquire waits before the caller compiles itself
	// (default pollwait.DefaultWait). A negative value means do not wait at all.
	Wait time.Duration
	// ReaderGrace bounds how long a reader waits while no lease exists
	// (default pollwait.DefaultReaderGrace, capped at Wait).
	ReaderGrace time.Duration
	// PollMin and PollMax bound the waiter's exponential backoff.
	PollMin, PollMax time.Duration
	// NoClaim makes the flight never create or take over a lease object
	// (reader role): it only waits for entries writers publish.
	NoClaim bool
	// NoProbe skips the probe of the store's conditional writes: for
	// stores known to honour them (blob/memblob in tests).
	NoProbe bool
	// Logger receives the few log lines (probe result, takeover, lost
	// lease, wait timeout).
	Logger *slog.Logger
	// Logs, when set, is the process's log-once filter (shared with the
	// cache), so that a failure of one kind is logged once per process.
	Logs *logonce.Logger
	// SigningKey, when set (the job's XLACACHE_SIGNING_KEY), signs every
	// lease record this flight writes, and a waiter waits only for a
	// lease whose record is signed with it: anyone who can write the
	// bucket could otherwise hold a lease on a predictable name, keep it
	// alive, and make every cold compile of every host wait the whole
	// Wait for an entry that never comes. Keys that cannot sign (an
	// Ed25519 reader's) write unsigned records, which others do not wait
	// for: such a process never publishes, so there is nothing to wait for.
	SigningKey *sign.Keys
}

// Flight is single-flight compilation through lease objects in a store.
// It implements cache.Flight. Safe for concurrent use.
type Flight struct {
	opts  Options
	st    blob.Store
	logs  *logonce.Logger
	log   *slog.Logger
	host  string
	probe *probeState

	// noClaim starts as Options.NoClaim; StopClaiming sets it.
	noClaim atomic.Bool

	graces pollwait.Graces
}

// New returns a Flight over opts.Store. It does not contact the store.
func New(opts Options) (*Flight, error) {
	if opts.Store == nil {
		return nil, errors.New("blobflight: no store")
	}
	if err := pollwait.Resolve(defaults, &opts.Stale, &opts.Heartbeat, &opts.Wait, &opts.ReaderGrace, &opts.PollMin, &opts.PollMax); err != nil {
		return nil, fmt.Errorf("blobflight: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logs := opts.Logs
	if logs == nil {
		logs = logonce.New(logger)
	}
	host, _ := os.Hostname()
	f := &Flight{
		opts:  opts,
		st:    opts.Store,
		logs:  logs,
		log:   logger,
		host:  host,
		probe: probeFor(opts.Store),
	}
	f.noClaim.Store(opts.NoClaim)
	return f, nil
}

// StopClaiming makes the flight a reader's from now on: it never creates
// or takes over a lease object again, and only waits for entries writers
// publish. For a process configured as a writer whose cache turned out
// read-only (an unwritable directory): it publishes nothing, so a lease
// it held would only make other hosts wait for an entry that never comes.
func (f *Flight) StopClaiming() { f.noClaim.Store(true) }

// claims reports whether this flight may create and take over leases.
func (f *Flight) claims() bool { return !f.noClaim.Load() }

// Options returns the flight's options with defaults filled in.
func (f *Flight) Options() Options { return f.opts }

// LeaseName returns the lease object of the entry object name
// (layout.LeaseObject).
func LeaseName(name string) string { return layout.LeaseObject(name) }

// maxRecord bounds a lease record: a longer lease object is not one this
// package wrote.
const maxRecord = 4096

// record is the content of a lease object. Beat changes with every
// heartbeat so that the object's ETag (a digest of its content on S3)
// changes too; the rest names the holder for people reading the bucket.
type record struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Start time.Time `json:"start"`
	Token string    `json:"token"`
	Name  string    `json:"name"`
	Beat  uint64    `json:"beat"`
	// MAC is the hex HMAC-SHA256 of the record without it, under the
	// flight's signing key; empty when there is none.
	MAC string `json:"mac,omitempty"`
}

// parseRecord decodes a lease object's content. Anyone who can write the
// bucket can write it, so it is only ever compared (its token with the
// holder's own), never acted on.
func parseRecord(data []byte) (record, error) {
	var r record
	if len(data) == 0 || len(data) > maxRecord {
		return record{}, fmt.Errorf("blobflight: lease record of %d bytes", len(data))
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return record{}, fmt.Errorf("blobflight: lease record: %w", err)
	}
	if r.Token == "" {
		return record{}, errors.New("blobflight: lease record without a token")
	}
	return r, nil
}

func (r record) bytes() []byte {
	b, _ := json.Marshal(r) // a record always marshals
	return append(b, '\n')
}

// signed returns the record's signature under keys
// (sign.Keys.SignText over its JSON with the MAC field empty: for HMAC the
// hex HMAC-SHA256 it always was).
func (r record) signed(keys *sign.Keys) (string, error) {
	r.MAC = ""
	return keys.SignText(r.bytes())
}

// verify checks the record's signature under keys.
func (r record) verify(keys *sign.Keys) bool {
	mac := r.MAC
	r.MAC = ""
	return mac != "" && keys.VerifyText(r.bytes(), mac) == nil
}

// encode is the lease object's content for r: signed when the flight has
// a key.
func (f *Flight) encode(r record) []byte {
	if f.opts.SigningKey.CanSign() {
		// CanSign: only a failing signer errs; the record then goes
		// unsigned, and waiters compile rather than wait for it.
		r.MAC, _ = r.signed(f.opts.SigningKey)
	}
	return r.bytes()
}

// trusted reports whether the lease object lname (for the entry name),
// whose ETag is etag, is one to wait for: without a signing key every
// lease is; with one, only a record signed with it for this entry. A
// lease that cannot be read is trusted (the wait stays bounded by Wait):
// a store error is not evidence of a forgery.
func (w *waiter) trusted(etag string) bool {
	f := w.f
	if !f.opts.SigningKey.Enabled() {
		return true
	}
	data, info, err := readRecord(w.ctx, f.st, w.lname)
	if err != nil || info.ETag != etag {
		return true // gone or changed since the look: judged at the next one
	}
	r, err := parseRecord(data)
	if err == nil && r.Name == w.name && r.verify(f.opts.SigningKey) {
		return true
	}
	f.logs.Warn("blobflight-unsigned-lease", "xlacache: a lease in the shared store is not signed with this job's key (XLACACHE_SIGNING_KEY); not waiting for it, compiling here",
		"lease", w.lname)
	return false
}

var newToken = pollwait.Token

// Acquire implements cache.Flight for the entry object name
// ("<tier>/<key>", which is also the flight name the cache passes): it
// returns nil once ready() reports the entry in the local directory or the
// entry object exists in the store, a real release once this process
// holds the lease, and a no-op release when the caller should compile by
// itself (wait ran out, a store error, leases off, holder gone). The error
// is non-nil only when ctx is done.
func (f *Flight) Acquire(ctx context.Context, name string, ready func() bool) (func(), error) {
	return f.AcquireSince(ctx, name, ready, time.Now())
}

// AcquireSince is Acquire with the wait bound counted from start rather
// than from the call: a caller that already waited for a lease at another
// level (the cache directory's) does not wait twice as long.
func (f *Flight) AcquireSince(ctx context.Context, name string, ready func() bool, start time.Time) (func(), error) {
	noop := func() {}
	lname := LeaseName(name)
	if blob.ValidName(name) != nil || blob.ValidName(lname) != nil {
		return noop, nil
	}
	if f.claims() && !f.opts.NoProbe {
		switch f.leasesOn(ctx) {
		case probeOff, probeUnknown:
			return noop, ctx.Err()
		}
	}
	w := waiter{f: f, ctx: ctx, name: name, lname: lname, ready: ready, start: start}
	// An entry object the first look finds was refused by the caller's
	// lookup just before, unless the caller has been waiting since that
	// lookup (at another level): then it is more likely new.
	w.trustFirst = time.Since(start) > freshLookup
	return w.run()
}

// freshLookup is how old the caller's own lookup of the entry may be for
// an object found at the first look to be the one it refused.
const freshLookup = 100 * time.Millisecond

// waiter is one Acquire.
type waiter struct {
	f           *Flight
	ctx         context.Context
	name, lname string
	ready       func() bool
	start       time.Time
	obsETag     string    // the lease ETag last seen
	obsSince    time.Time // local monotonic time it was first seen
	sawOther    bool      // a lease of another process was seen
	// looked and seen: the entry object as the first look found it. One
	// already there is the one the caller has just refused (damaged, too
	// large): only a different object (a repair) counts as ready.
	looked bool
	seen   *blob.Info
	// trustFirst: an object the first look finds counts as ready (see
	// AcquireSince).
	trustFirst bool
}

func (w *waiter) run() (func(), error) {
	f := w.f
	noop := func() {}
	backoff := f.opts.PollMin
	for {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		switch ok, err := w.entryReady(); {
		case err != nil:
			return noop, w.ctxErr()
		case ok:
			return nil, nil
		}
		info, err := f.st.Stat(w.ctx, w.lname)
		switch {
		case errors.Is(err, blob.ErrNotExist):
			if w.sawOther {
				if w.seen != nil {
					// The object the first look found may be the one the
					// holder published just before that look: let the
					// caller try it (a refused one is refused again).
					return nil, nil
				}
				// The holder may have published and released between
				// the look above and this one (a round trip to a real
				// server is a wide window): look again before
				// concluding it published nothing.
				if ok, err := w.entryReady(); err == nil && ok {
					return nil, nil
				}
				// Released without the entry appearing: its holder
				// compiled nothing worth publishing, so claiming in turn
				// would only serialize the same unpublished compile.
				return noop, nil
			}
			if f.claims() {
				l, err := w.claim()
				switch {
				case err == nil && l != nil:
					return w.claimed(l)
				case err != nil:
					return noop, w.ctxErr()
				}
				// Another host created it first: look at it next round.
			}
		case err != nil:
			f.storeFailure("reading a lease", w.lname, err)
			return noop, w.ctxErr()
		default:
			now := time.Now()
			if info.ETag != w.obsETag || w.obsSince.IsZero() {
				if !w.trusted(info.ETag) {
					return noop, nil
				}
				w.obsETag, w.obsSince = info.ETag, now
			}
			if !w.sawOther {
				f.graces.Outcome(true)
			}
			w.sawOther = true
			if now.Sub(w.obsSince) >= f.opts.Stale {
				if !f.claims() {
					f.logs.Info("blobflight-holder-gone", "xlacache: the host compiling this entry stopped its lease heartbeat; compiling here", "name", w.name)
					return noop, nil
				}
				l, err := w.takeOver()
				switch {
				case err != nil:
					return noop, w.ctxErr()
				case l != nil:
					return w.claimed(l)
				}
				// Another taker won, or the holder beat: watch afresh.
				w.obsETag, w.obsSince = "", time.Time{}
				backoff = f.opts.PollMin
			}
		}
		waited := time.Since(w.start)
		if f.opts.Wait < 0 {
			f.log.Debug("xlacache: another host is compiling this; not waiting (wait disabled)", "name", w.name)
			return noop, nil
		}
		if waited >= f.opts.Wait {
			f.logs.Warn("blobflight-wait-timeout", "xlacache: waited too long for another host; compiling here", "name", w.name, "waited", waited.Round(time.Millisecond))
			return noop, nil
		}
		if !w.sawOther && !f.claims() && waited >= f.readerGrace() {
			if ok, _ := w.entryReady(); ok {
				f.graces.Outcome(true)
				return nil, nil
			}
			f.graces.Outcome(false)
			return noop, nil
		}
		if err := pollwait.Sleep(w.ctx, pollwait.Jitter(backoff)); err != nil {
			return nil, err
		}
		backoff = min(backoff*2, f.opts.PollMax)
	}
}

// ctxErr is the error Acquire returns after a store failure: none, unless
// the failure was ctx ending.
func (w *waiter) ctxErr() error { return w.ctx.Err() }

// entryReady reports whether the entry is there: in the local directory
// (the caller's ready) or as a new object in the store (not the one the
// first look found: see seen). A store error other than "absent" is
// logged and returned: the caller compiles.
func (w *waiter) entryReady() (bool, error) {
	if w.ready != nil && w.ready() {
		return true, nil
	}
	info, err := w.f.st.Stat(w.ctx, w.name)
	first := !w.looked
	w.looked = true
	switch {
	case err == nil:
		if first && !w.trustFirst {
			w.seen = &info
			return false, nil
		}
		s := w.seen
		return s == nil || s.ETag != info.ETag || s.Size != info.Size || !s.ModTime.Equal(info.ModTime), nil
	case errors.Is(err, blob.ErrNotExist):
		return false, nil
	}
	w.f.storeFailure("looking for a shared entry", w.name, err)
	return false, err
}

// claimed hands over a lease this process now holds, unless the entry was
// published between the last look and the claim (by a holder that has
// just released): then the lease goes at once and the caller loads it.
func (w *waiter) claimed(l *Lease) (func(), error) {
	if ok, _ := w.entryReady(); ok {
		l.Release()
		return nil, nil
	}
	return l.Release, nil
}

// claim tries to create the lease object. It returns (nil, nil) when
// another host created it first.
func (w *waiter) claim() (*Lease, error) {
	f := w.f
	rec := f.newRecord(w.name)
	err := f.st.PutIfAbsent(w.ctx, w.lname, f.encode(rec))
	switch {
	case errors.Is(err, blob.ErrExist):
		return nil, nil
	case err != nil:
		f.storeFailure("creating a lease", w.lname, err)
		return nil, err
	}
	// PutIfAbsent reports no ETag: read it back, and check the object is
	// still this record (nobody can have replaced it yet: a takeover
	// needs Stale of silence).
	info, err := f.st.Stat(w.ctx, w.lname)
	if err != nil || info.ETag == "" {
		if err == nil {
			err = errors.New("the store reports no ETag")
		}
		f.storeFailure("reading back a lease", w.lname, err)
		// The lease stays until it goes stale: best effort to remove it,
		// bounded like a release.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), f.opts.Stale)
		defer cancel()
		f.st.Delete(dctx, w.lname)
		return nil, err
	}
	return f.startLease(w.lname, rec, info.ETag), nil
}

// takeOver replaces the lease last observed (obsETag) with this process's,
// on condition that it is still that object. It returns (nil, nil) when
// another taker won or the holder beat meanwhile.
func (w *waiter) takeOver() (*Lease, error) {
	f := w.f
	rec := f.newRecord(w.name)
	etag, err := f.st.ReplaceIfMatch(w.ctx, w.lname, w.obsETag, f.encode(rec))
	switch {
	case errors.Is(err, blob.ErrPrecondition):
		return nil, nil
	case err != nil:
		f.storeFailure("taking over a lease", w.lname, err)
		return nil, err
	}
	if etag == "" {
		info, err := f.st.Stat(w.ctx, w.lname)
		if err != nil {
			f.storeFailure("reading back a lease", w.lname, err)
			return nil, err
		}
		etag = info.ETag
	}
	f.logs.Info("blobflight-takeover", "xlacache: took over a stale lease in the shared store", "name", w.name, "stale_after", f.opts.Stale)
	return f.startLease(w.lname, rec, etag), nil
}

func (f *Flight) newRecord(name string) record {
	return record{Host: f.host, PID: os.Getpid(), Start: time.Now().UTC(), Token: newToken(), Name: name}
}

// storeFailure logs a store error once per kind; an unreachable store is
// logged by its Guard already, so only at Debug here.
func (f *Flight) storeFailure(what, name string, err error) {
	if errors.Is(err, blob.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		f.log.Debug("xlacache: shared store lease "+what+" failed; compiling without single-flight", "object", name, "err", err)
		return
	}
	f.logs.Warn("blobflight:"+what, "xlacache: shared store lease failed; compiling without single-flight across hosts", "what", what, "object", name, "err", err)
}

// readerGrace is how long a reader waits for a lease to appear.
func (f *Flight) readerGrace() time.Duration {
	if f.graces.Exhausted() {
		// The last grace ended with nobody claiming: writers evidently do
		// not compile what this reader compiles.
		return 0
	}
	return f.opts.ReaderGrace
}

// Lease is a lease object this process holds. Release it exactly once.
type Lease struct {
	f    *Flight
	name string
	hb   *pollwait.Heartbeat

	mu   sync.Mutex
	rec  record
	etag string
}

// startLease starts the heartbeat of a lease this process now holds: it
// rewrites the lease every Heartbeat, on condition that it is still the
// object this process last wrote.
func (f *Flight) startLease(name string, rec record, etag string) *Lease {
	l := &Lease{f: f, name: name, rec: rec, etag: etag}
	l.hb = pollwait.StartHeartbeat(f.opts.Heartbeat, l.beat)
	return l
}

// Lost reports whether another host took the lease over while this
// process held it.
func (l *Lease) Lost() bool { return l.hb.Lost() }

// beat is one heartbeat; false when the lease is lost.
func (l *Lease) beat() bool {
	f := l.f
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.Heartbeat)
	defer cancel()
	l.mu.Lock()
	l.rec.Beat++
	rec, etag := l.rec, l.etag
	l.mu.Unlock()
	next, err := f.st.ReplaceIfMatch(ctx, l.name, etag, f.encode(rec))
	if err == nil && next == "" {
		var info blob.Info
		if info, err = f.st.Stat(ctx, l.name); err == nil {
			next = info.ETag
		}
	}
	switch {
	case err == nil:
		l.mu.Lock()
		l.etag = next
		l.mu.Unlock()
		return true
	case errors.Is(err, blob.ErrPrecondition):
		// Our previous beat may have landed without its answer reaching
		// us: then the object is still ours, under an ETag we never saw.
		if data, info, rerr := readRecord(ctx, f.st, l.name); rerr == nil {
			if cur, err := parseRecord(data); err == nil && cur.Token == rec.Token {
				l.mu.Lock()
				l.etag = info.ETag
				l.mu.Unlock()
				return true
			}
		}
		f.logs.Warn("blobflight-lost", "xlacache: lease in the shared store lost to another host; finishing anyway (the result is published first-writer-wins)",
			"lease", l.name)
		return false
	default:
		// Keep trying: a beat or two may fail without the lease going
		// stale (Heartbeat is a quarter of Stale).
		f.storeFailure("refreshing a lease", l.name, err)
		return true
	}
}

// Release stops the heartbeat and deletes the lease object if it is still
// this holder's. Safe to call more than once.
func (l *Lease) Release() {
	if !l.hb.Stop() || l.Lost() {
		return
	}
	f := l.f
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.Stale)
	defer cancel()
	l.mu.Lock()
	etag := l.etag
	l.mu.Unlock()
	info, err := f.st.Stat(ctx, l.name)
	if err != nil {
		if !errors.Is(err, blob.ErrNotExist) {
			f.storeFailure("releasing a lease", l.name, err)
		}
		return
	}
	if info.ETag != etag {
		return // taken over: not ours to delete
	}
	if err := f.st.Delete(ctx, l.name); err != nil {
		f.storeFailure("releasing a lease", l.name, err)
	}
}

// readRecord reads a lease object of at most maxRecord bytes.
func readRecord(ctx context.Context, st blob.Store, name string) ([]byte, blob.Info, error) {
	rc, info, err := st.Open(ctx, name)
	if err != nil {
		return nil, blob.Info{}, err
	}
	defer rc.Close()
	data, err := blob.ReadSized(rc, info, maxRecord)
	return data, info, err
}
