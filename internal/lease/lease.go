// Package lease implements single-flight claims in a cache directory, so
// that when several processes (on one host, or on many hosts sharing a
// network filesystem) miss the same entry at once, exactly one of them does
// the expensive work and the others wait for its result.
//
// A claim is a lease file <dir>/locks/<hash>.lease created with O_EXCL. flock
// is deliberately not used: it is unreliable or silently local-only on many
// network filesystems, whereas exclusive create is atomic on local
// filesystems and on NFSv3+. The holder proves it is alive by refreshing the
// file's modification time (a heartbeat); a lease whose heartbeat stops is
// stale and may be taken over. A taker first claims a per-lease takeover
// lock (O_EXCL again), re-checks that the lease is still the stale one it
// observed, and atomically renames its own complete lease file over it. So
// two takers cannot both win, and the lease never disappears during a
// takeover (which waiters would read as "released without publishing").
//
// Staleness is judged without trusting clocks across hosts: a waiter notes
// the lease's (token, mtime, size) and measures on its own monotonic clock
// how long that observation has stayed unchanged. No timestamp written by
// another host is ever compared with this host's clock, so a holder whose
// clock is minutes behind is not taken for dead. The one shortcut is on the
// same host (same kernel boot and pid namespace): a holder whose pid no
// longer exists is stale at once.
//
// Anything at a lease path that is not a regular file (a directory, FIFO,
// socket, device or symlink) is never opened in a way that can block or
// follow it: claims for that name are impossible, and the caller compiles
// without single-flight at once. An empty or unparseable lease file (a
// creator that died between create and write, or damage) is taken over
// once it has looked the same for a short grace, not the full stale
// interval.
package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/logonce"
	"github.com/xlacache/xlacache/internal/pollwait"
)

// defaults are the timing options' defaults (Options fields left zero):
// a waiter's look is a stat of a local or network file, so it polls often.
var defaults = pollwait.Defaults(5*time.Millisecond, 100*time.Millisecond)

const (
	// maxGarbageGrace bounds how long an empty or unparseable lease file
	// must look unchanged before it is taken over (see garbageGrace).
	maxGarbageGrace = time.Second
	// maxRecord bounds a holder record; a longer lease file is garbage.
	maxRecord = 4096
)

// LocksDir is the subdirectory of the cache directory that holds leases.
const LocksDir = layout.LocksDir

// Options configures a Manager.
type Options struct {
	// Dir is the cache directory; leases live in Dir/locks.
	Dir string
	// Stale is how long an unchanged heartbeat makes a lease stale
	// (default pollwait.DefaultStale).
	Stale time.Duration
	// Heartbeat is how often a holder refreshes its lease (default Stale/4).
	Heartbeat time.Duration
	// Wait bounds how long Acquire waits before the caller compiles itself
	// (default pollwait.DefaultWait). A negative value means do not wait at all.
	Wait time.Duration
	// ReaderGrace bounds how long a process that cannot claim (reader role,
	// read-only directory) waits while no lease exists (default
	// pollwait.DefaultReaderGrace, capped at Wait).
	ReaderGrace time.Duration
	// WriterPresent, when set, tells a process that cannot claim whether a
	// writer uses this directory at all (for the cache: its state directory
	// exists). Without one in sight the grace is a quarter of ReaderGrace,
	// so readers on a host with no writer do not wait for nobody.
	WriterPresent func() bool
	// PollMin and PollMax bound the waiter's exponential backoff.
	PollMin, PollMax time.Duration
	// NoClaim makes the manager never create a lease (reader role): it only
	// waits for entries another process publishes.
	NoClaim bool
	// NoPIDCheck disables the same-host shortcut that treats a lease whose
	// holder pid is gone as stale at once; only the heartbeat then counts.
	NoPIDCheck bool
	// DirMode and FileMode are the permissions of the locks directory and
	// lease files (default 0700 / 0600).
	DirMode, FileMode os.FileMode
	// Logger receives the few log lines (takeover, lost lease, wait
	// timeout, damaged lease paths): each kind once per Manager at Info or
	// Warn, repeats at Debug.
	Logger *slog.Logger
	// Logs, when set, is the log-once filter to use instead of the
	// Manager's own: the cache's, so that a failure of one kind (a full
	// disk, a read-only mount, a permission problem: logonce.FailureKey)
	// is logged once per process, whichever of them meets it first.
	Logs *logonce.Logger
}

// Holder is what a lease file records about the process holding it.
type Holder struct {
	Host   string    `json:"host"`
	HostID string    `json:"host_id"`
	PID    int       `json:"pid"`
	Start  time.Time `json:"start"`
	Token  string    `json:"token"`
	Name   string    `json:"name"`
}

// ErrHeld is returned by TryClaim when another live process holds the lease.
var ErrHeld = errors.New("lease: held by another process")

// ErrNoClaim is returned by TryClaim when this manager cannot create leases
// (reader role or a directory it cannot write).
var ErrNoClaim = errors.New("lease: claims are not possible here")

// Manager creates, refreshes, takes over and waits on leases in one
// directory. It is safe for concurrent use.
type Manager struct {
	opts   Options
	dir    string
	log    *slog.Logger
	host   string
	hostID string

	mu       sync.Mutex
	noClaim  bool // becomes true when the directory turns out unwritable
	warnedRO bool
	graces   pollwait.Graces
	logs     *logonce.Logger // one Warn line per kind of failure
	// tlocks holds this process's observations of takeover locks left
	// behind, so that one is removed only after it has looked the same
	// for Stale on this host's own clock.
	tlocks map[string]observation
}

// New returns a Manager for opts.Dir. It does not touch the filesystem until
// a lease is claimed.
func New(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, errors.New("lease: empty directory")
	}
	if err := pollwait.Resolve(defaults, &opts.Stale, &opts.Heartbeat, &opts.Wait, &opts.ReaderGrace, &opts.PollMin, &opts.PollMax); err != nil {
		return nil, fmt.Errorf("lease: %w", err)
	}
	if opts.DirMode == 0 {
		opts.DirMode = 0o700
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o600
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	logs := opts.Logs
	if logs == nil {
		logs = logonce.New(logger)
	}
	return &Manager{
		opts:    opts,
		dir:     layout.Dir(opts.Dir).Locks(),
		log:     logger,
		host:    host,
		hostID:  localHostID(host),
		noClaim: opts.NoClaim,
		logs:    logs,
		tlocks:  make(map[string]observation),
	}, nil
}

// Options returns the manager's options with defaults filled in.
func (m *Manager) Options() Options { return m.opts }

// localHostID identifies the pid namespace of this kernel boot, so that a
// pid recorded in a lease can be checked with kill(pid, 0) only when it
// means the same process here. Containers sharing a hostname but not a pid
// namespace get different IDs.
func localHostID(host string) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return host + "/" + strings.TrimSpace(string(boot)) + "/" + ns
}

// Path returns the lease file used for name. Names are hashed, so any
// string is safe and cannot escape the locks directory.
func (m *Manager) Path(name string) string { return layout.Dir(m.opts.Dir).Lease(name) }

// Lease is a claim this process holds. Release it exactly once.
type Lease struct {
	m      *Manager
	path   string
	holder Holder
	hb     *pollwait.Heartbeat
}

// Lost reports whether the lease was taken over by another process while
// this one held it (its heartbeat stopped reaching the file in time).
func (l *Lease) Lost() bool { return l.hb.Lost() }

// Release stops the heartbeat and removes the lease file if it is still
// this holder's. It is safe to call more than once.
func (l *Lease) Release() {
	if !l.hb.Stop() {
		return
	}
	if err := l.m.removeIfToken(l.path, l.holder.Token); err != nil {
		l.m.logOnce(logonce.FailureKey(err), "xlacache: releasing lease", "lease", l.path, "err", err)
	}
}

var newToken = pollwait.Token

// TryClaim makes one attempt to claim name. It returns ErrHeld when a live
// lease exists (stale leases are taken over) and ErrNoClaim when claims are
// impossible here.
func (m *Manager) TryClaim(name string) (*Lease, error) {
	if m.claimDisabled() {
		return nil, ErrNoClaim
	}
	if err := os.MkdirAll(m.dir, m.opts.DirMode); err != nil {
		if isNoWrite(err) {
			m.disableClaims(err)
			return nil, ErrNoClaim
		}
		return nil, fmt.Errorf("lease: creating %s: %w", m.dir, err)
	}
	// A symlink planted at locks/ would make every lease file land outside
	// the cache directory.
	if st, err := os.Lstat(m.dir); err == nil && !st.IsDir() {
		m.disableClaims(fmt.Errorf("lease: %s is a %s, not a directory", m.dir, atomicfile.TypeName(st.Mode())))
		return nil, ErrNoClaim
	}
	path := m.Path(name)
	h := Holder{Host: m.host, HostID: m.hostID, PID: os.Getpid(), Start: time.Now().UTC(), Token: newToken(), Name: name}
	err := m.create(path, h)
	if err == nil {
		return m.startLease(path, h), nil
	}
	if errors.Is(err, os.ErrExist) {
		return nil, ErrHeld
	}
	if isNoWrite(err) {
		m.disableClaims(err)
		return nil, ErrNoClaim
	}
	return nil, err
}

// create writes a new lease file with O_EXCL. The holder record is written
// after the create; readers tolerate a short or empty file.
//
// The claim is the exclusive create itself, not atomicfile.Publish (a
// temporary file hard-linked into place): Publish falls back to a
// check-then-rename where links are unsupported, which would let two
// claimers both win, and its fsync would add a disk flush to every miss
// for a file whose loss in a crash only makes the lease stale.
func (m *Manager) create(path string, h Holder) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, m.opts.FileMode)
	if err != nil {
		return fmt.Errorf("lease: creating %s: %w", path, err)
	}
	_, werr := f.Write(holderRecord(h))
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("lease: writing %s: %w", path, werr)
	}
	return nil
}

// holderRecord is the content of a lease file: h as one JSON line.
func holderRecord(h Holder) []byte {
	data, _ := json.Marshal(h) // a Holder always marshals
	return append(data, '\n')
}

// startLease starts the heartbeat of a lease this process now holds: it
// refreshes the lease's mtime every Heartbeat until Release.
func (m *Manager) startLease(path string, h Holder) *Lease {
	l := &Lease{m: m, path: path, holder: h}
	l.hb = pollwait.StartHeartbeat(m.opts.Heartbeat, l.beat)
	return l
}

// beat is one heartbeat; false when the lease is lost. Before the refresh
// it checks the file still carries this holder's token: refreshing
// someone else's lease would keep a dead takeover alive.
func (l *Lease) beat() bool {
	h, _, err := readLease(l.path)
	if err != nil || h.Token != l.holder.Token {
		l.m.logOnce("lost", "xlacache: lease lost to another process; finishing anyway (the result is published first-writer-wins)",
			"lease", l.path, "name", l.holder.Name, "err", err)
		return false
	}
	if err := touch(l.path); err != nil {
		l.m.logOnce(logonce.FailureKey(err), "xlacache: lease heartbeat failed", "lease", l.path, "err", err)
	}
	return true
}

// touch is the heartbeat: it sets the lease's mtime to "now", without
// following a symlink that may have replaced the lease. Observers only
// look for a change of mtime, so whose clock stamps it does not matter.
func touch(path string) error {
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, heartbeatTimes(), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("lease: refreshing %s: %w", path, err)
	}
	return nil
}

// errNotRegular marks something other than a regular file at a lease
// path: claims for that name are impossible.
var errNotRegular = errors.New("not a regular file")

// leaseState is one look at a lease file.
type leaseState struct {
	h     Holder
	mtime time.Time
	size  int64
	// garbage: the record is empty, unparseable, too long or has no token
	// (h is then zero). A creator writes its record right after the
	// exclusive create, so this lasts only a moment unless it died there.
	garbage bool
}

// readLease returns the holder and mtime of the lease at path; see
// readLeaseState.
func readLease(path string) (Holder, time.Time, error) {
	s, err := readLeaseState(path)
	return s.h, s.mtime, err
}

// readLeaseState opens the lease afresh (which revalidates cached
// attributes on NFS, close-to-open consistency) and returns its holder,
// mtime and size, taken from the open file. Lease paths are under a
// directory other processes can write, so anything there may be planted:
// it is checked with Lstat before it is opened, and opened with O_NOFOLLOW
// and O_NONBLOCK, so that a symlink is never followed and a FIFO swapped in
// meanwhile cannot block the open (SIGTERM does not end a process blocked
// in open(2) on a FIFO). An error wrapping errNotRegular means the path is
// not a regular file. A lease file this process may not read is judged by
// its heartbeat alone (zero Holder).
func readLeaseState(path string) (leaseState, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return leaseState{}, err
	}
	if !st.Mode().IsRegular() {
		return leaseState{}, fmt.Errorf("lease: %s is a %s: %w", path, atomicfile.TypeName(st.Mode()), errNotRegular)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return leaseState{}, fmt.Errorf("lease: %s is a symbolic link: %w", path, errNotRegular)
		case errors.Is(err, os.ErrPermission):
			return leaseState{mtime: st.ModTime(), size: st.Size()}, nil
		}
		return leaseState{}, err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return leaseState{}, err
	}
	if !fst.Mode().IsRegular() {
		return leaseState{}, fmt.Errorf("lease: %s is a %s: %w", path, atomicfile.TypeName(fst.Mode()), errNotRegular)
	}
	s := leaseState{mtime: fst.ModTime(), size: fst.Size()}
	data, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return s, err
	}
	h, perr := ParseHolder(data)
	if perr != nil || h.Token == "" || len(data) > maxRecord {
		s.garbage = true
		return s, nil
	}
	s.h = h
	return s, nil
}

// ParseHolder decodes a lease file's holder record. Lease files are written
// by other processes, possibly other hosts, and may be empty or cut short
// (the creator died between create and write); that is an error here and a
// zero Holder for the caller, which takes such a lease over after a short
// grace.
func ParseHolder(data []byte) (Holder, error) {
	var h Holder
	if len(data) == 0 {
		return Holder{}, errors.New("lease: empty holder record")
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return Holder{}, fmt.Errorf("lease: holder record: %w", err)
	}
	if h.PID < 0 {
		return Holder{}, fmt.Errorf("lease: holder record: negative pid %d", h.PID)
	}
	return h, nil
}

// removeIfToken removes the lease at path only if it carries token. It
// renames the file to a private name first so that the check and the
// removal concern the same file; if what it moved is someone else's lease,
// it puts it back with link (which fails rather than overwrite).
func (m *Manager) removeIfToken(path, token string) error {
	if h, _, err := readLease(path); err != nil || h.Token != token {
		// Gone, or taken over: not ours to remove.
		return nil
	}
	private := path + "." + newToken() + ".release"
	if err := os.Rename(path, private); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("lease: moving %s: %w", path, err)
	}
	h, _, err := readLease(private)
	if err == nil && h.Token != token && h.Token != "" {
		m.restore(private, path)
		return nil
	}
	if err := os.Remove(private); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lease: removing %s: %w", private, err)
	}
	return nil
}

// restore puts a lease moved away by mistake back in place, unless a new
// lease was created meanwhile (then the moved one's holder will notice at
// its next heartbeat that it lost the lease).
func (m *Manager) restore(private, path string) {
	if err := os.Link(private, path); err != nil && !errors.Is(err, os.ErrExist) {
		m.logOnce(logonce.FailureKey(err), "xlacache: restoring lease", "lease", path, "err", err)
	}
	os.Remove(private)
}

func (m *Manager) claimDisabled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.noClaim
}

func (m *Manager) disableClaims(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noClaim = true
	if !m.warnedRO {
		m.warnedRO = true
		m.logOnce(logonce.FailureKey(err), "xlacache: cannot create leases; waiting for other processes without claiming", "dir", m.dir, "err", err)
	}
}

func isNoWrite(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// observation tracks how long a file has looked the same to this process,
// on this process's own monotonic clock.
type observation struct {
	token string
	mtime time.Time
	size  int64
	ino   uint64    // takeover locks only: tells a re-created lock apart
	since time.Time // local monotonic time of the first sighting
}

// verdict is what a waiter concludes from one look at a lease path.
type verdict int

const (
	vAbsent    verdict = iota // no lease, or none readable right now
	vLive                     // a lease whose heartbeat is still changing
	vStale                    // heartbeat unchanged for Stale, or same-host holder gone
	vGarbage                  // empty or unparseable, unchanged for garbageGrace
	vWrongType                // not a regular file: claims are impossible for this name
)

// judge looks at the lease at path once and updates obs. Staleness is
// only ever measured as time on this process's monotonic clock during
// which the lease's (token, mtime, size) stayed the same: the mtime is
// compared with earlier readings of itself, never with this host's clock,
// so clock skew between hosts cannot make a live lease look stale. The
// error is set with vWrongType (and for unreadable leases, with vAbsent).
func (m *Manager) judge(path string, obs *observation) (Holder, verdict, error) {
	s, err := readLeaseState(path)
	if err != nil {
		if errors.Is(err, errNotRegular) {
			return Holder{}, vWrongType, err
		}
		return Holder{}, vAbsent, err
	}
	now := time.Now()
	if obs.since.IsZero() || obs.token != s.h.Token || !obs.mtime.Equal(s.mtime) || obs.size != s.size {
		*obs = observation{token: s.h.Token, mtime: s.mtime, size: s.size, since: now}
	}
	unchanged := now.Sub(obs.since)
	switch {
	case s.garbage && unchanged >= m.garbageGrace():
		return s.h, vGarbage, nil
	case unchanged >= m.opts.Stale:
		return s.h, vStale, nil
	case !m.opts.NoPIDCheck && s.h.PID > 0 && s.h.HostID != "" && s.h.HostID == m.hostID && !pidAlive(s.h.PID):
		// Same kernel boot and pid namespace: no clocks are compared.
		return s.h, vStale, nil
	}
	return s.h, vLive, nil
}

// garbageGrace is how long an empty or unparseable lease must look
// unchanged before it is taken over: long enough for a creator to write
// its record right after the exclusive create, far shorter than Stale.
func (m *Manager) garbageGrace() time.Duration {
	return min(maxGarbageGrace, m.opts.Stale/10)
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// takeOver replaces the stale lease at path with a new lease held by this
// process, if it is still the one observed (same token, mtime and size).
// Takers first claim a per-lease takeover lock with O_EXCL, so at most one
// of them acts at a time, and re-read the lease under it; the replacement
// is an atomic replace (atomicfile.Replace: a complete lease file renamed
// onto the path), so the lease never disappears (waiters see a new holder,
// not a release). It returns the new lease, or nil when another taker got
// there first, the lease changed since it was observed, or the takeover
// failed; the error wraps errNotRegular when something other than a
// regular file sits at the takeover lock's path.
//
// The re-read and the rename are not one atomic step: a holder that was
// only slow (not dead) may release in between and a fresh claimer may then
// create the lease, which the rename replaces. That claimer's heartbeat
// then finds a foreign token and reports the lease lost; it finishes its
// compile anyway, so the cost is one duplicate compile, never a wrong
// result (entries are published first-writer-wins).
func (m *Manager) takeOver(path, name string, stale Holder, obs observation, garbage bool) (*Lease, error) {
	lock := path + ".takeover"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, m.opts.FileMode)
	if errors.Is(err, os.ErrExist) {
		removed, lerr := m.leftoverLock(lock)
		if lerr != nil || !removed {
			return nil, lerr
		}
		f, err = os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, m.opts.FileMode)
	}
	if err != nil {
		return nil, nil
	}
	f.Close()
	defer os.Remove(lock)
	s, err := readLeaseState(path)
	if err != nil || s.h.Token != obs.token || !s.mtime.Equal(obs.mtime) || s.size != obs.size {
		return nil, nil
	}
	mine := Holder{Host: m.host, HostID: m.hostID, PID: os.Getpid(), Start: time.Now().UTC(), Token: newToken(), Name: name}
	if err := atomicfile.Replace(path, holderRecord(mine), atomicfile.Options{Perm: m.opts.FileMode}); err != nil {
		m.logOnce(logonce.FailureKey(err), "xlacache: cannot take over a stale lease", "lease", path, "err", err)
		return nil, nil
	}
	if garbage {
		m.logOnce("garbage", "xlacache: replaced an empty or unparseable lease file", "name", name, "lease", path)
	} else {
		m.logs.Info("takeover", "xlacache: took over a stale lease", "name", stale.Name, "holder_host", stale.Host, "holder_pid", stale.PID, "lease", path)
	}
	return m.startLease(path, mine), nil
}

// leftoverLock handles a takeover lock that already exists. A taker holds
// one only for a few file operations, so a lock that has looked the same
// for Stale on this process's own clock was left by a taker that died; it
// is removed (removed reports that) so that takeovers of the lease can
// proceed. Its mtime is never compared with this host's clock: another
// host may have created it.
func (m *Manager) leftoverLock(lock string) (removed bool, err error) {
	st, err := os.Lstat(lock)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		delete(m.tlocks, lock)
		return false, nil
	}
	if !st.Mode().IsRegular() {
		delete(m.tlocks, lock)
		return false, fmt.Errorf("lease: takeover lock %s is a %s: %w", lock, atomicfile.TypeName(st.Mode()), errNotRegular)
	}
	var ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = uint64(sys.Ino)
	}
	now := time.Now()
	o, seen := m.tlocks[lock]
	if !seen || o.ino != ino || !o.mtime.Equal(st.ModTime()) || o.size != st.Size() {
		m.tlocks[lock] = observation{mtime: st.ModTime(), size: st.Size(), ino: ino, since: now}
		return false, nil
	}
	if now.Sub(o.since) < m.opts.Stale {
		return false, nil
	}
	delete(m.tlocks, lock)
	if err := os.Remove(lock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return true, nil
}

// Acquire implements the single-flight protocol of cache.Flight: it returns
// (nil, nil) once ready() reports the entry present; a real release
// function when this process now holds the claim; a no-op release when the
// wait ran out or claims are impossible and nobody else is working on it.
// The error is non-nil only when ctx is done.
func (m *Manager) Acquire(ctx context.Context, name string, ready func() bool) (func(), error) {
	noop := func() {}
	start := time.Now()
	path := m.Path(name)
	backoff := m.opts.PollMin
	var obs observation
	// sawOther: a live lease of another process was seen. If it then
	// disappears without the entry appearing, its holder finished without
	// publishing (compile error, or below the storing thresholds): claiming
	// in turn would only serialize the same unpublished compile, so this
	// process compiles at once.
	sawOther := false
	// claimed hands over a lease this process now holds.
	claimed := func(l *Lease) (func(), error) {
		// The entry may have been published between ready() and the claim
		// by a holder that has just released.
		if ready() {
			l.Release()
			return nil, nil
		}
		return l.Release, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if ready() {
			return nil, nil
		}
		if sawOther {
			if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
				// Released: normally right after publishing, so look again.
				if ready() {
					return nil, nil
				}
				return noop, nil
			}
		}
		claimErr := ErrNoClaim
		if !m.claimDisabled() {
			l, err := m.TryClaim(name)
			switch {
			case err == nil:
				return claimed(l)
			case errors.Is(err, ErrHeld), errors.Is(err, ErrNoClaim):
				claimErr = err
			default:
				m.logOnce(logonce.FailureKey(err), "xlacache: lease claim failed; compiling without single-flight", "name", name, "err", err)
				return noop, nil
			}
		}
		h, v, jerr := m.judge(path, &obs)
		switch v {
		case vWrongType:
			m.wrongType(name, jerr)
			return noop, nil
		case vStale, vGarbage:
			if !m.claimDisabled() {
				l, err := m.takeOver(path, name, h, obs, v == vGarbage)
				if err != nil {
					m.wrongType(name, err)
					return noop, nil
				}
				if l != nil {
					return claimed(l)
				}
				// Another taker won, the lease changed, or a takeover lock
				// is in the way: look again soon, still within the wait
				// bound (a lock that never goes away must not make this
				// loop spin forever).
				obs = observation{}
				backoff = m.opts.PollMin
				break
			}
			// A reader cannot take over: the holder is dead (or never
			// wrote its record), so waiting longer would only delay this
			// process's own compile.
			if v == vGarbage {
				m.logOnce("garbage", "xlacache: empty or unparseable lease file; compiling here", "name", name, "lease", path)
			} else {
				m.logs.Info("holder-gone", "xlacache: the process compiling this entry is gone; compiling here", "name", name, "holder_pid", h.PID)
			}
			return noop, nil
		case vLive:
			if !sawOther {
				m.graces.Outcome(true) // another process is compiling what we need
			}
			sawOther = true
		}
		exists := v != vAbsent
		waited := time.Since(start)
		if m.opts.Wait < 0 {
			// Configured not to wait: compiling here is no surprise.
			m.log.Debug("xlacache: another process is compiling this; not waiting (wait disabled)", "name", name)
			return noop, nil
		}
		if waited >= m.opts.Wait {
			m.logOnce("wait-timeout", "xlacache: waited too long for another process; compiling here", "name", name, "waited", waited.Round(time.Millisecond))
			return noop, nil
		}
		if !exists && errors.Is(claimErr, ErrNoClaim) && waited >= m.readerGrace() {
			// Nobody claimed within the grace period.
			if ready() {
				m.graces.Outcome(true)
				return nil, nil
			}
			m.graces.Outcome(false)
			return noop, nil
		}
		if err := sleepCtx(ctx, pollwait.Jitter(backoff)); err != nil {
			return nil, err
		}
		backoff = min(backoff*2, m.opts.PollMax)
	}
}

// readerGrace is how long a process that cannot claim waits for a lease
// to appear.
func (m *Manager) readerGrace() time.Duration {
	if m.graces.Exhausted() {
		return 0
	}
	if m.opts.WriterPresent != nil && !m.opts.WriterPresent() {
		return m.opts.ReaderGrace / 4
	}
	return m.opts.ReaderGrace
}

func (m *Manager) logOnce(kind, msg string, args ...any) { m.logs.Warn(kind, msg, args...) }

// wrongType reports, once per process, that something other than a
// regular file sits at a lease path, so this name cannot be claimed. It is
// left alone (a planted directory is not this process's to remove) and the
// caller compiles without single-flight.
func (m *Manager) wrongType(name string, err error) {
	m.logOnce("wrong-type", "xlacache: lease path is not a regular file; compiling without single-flight", "name", name, "err", err)
}

// sleepCtx waits for d or until ctx is done (pollwait.Sleep).
var sleepCtx = pollwait.Sleep
