package hostfill

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/lockedfile"
)

// Files of the host's coordination, in the state directory.
const (
	leaderLockRel = stateRel + "/leader.lock"
	// fillLockRel is taken by each process in turn; it holds the end
	// time of the host's last fill.
	fillLockRel = stateRel + "/fill.lock"
)

// LocalRankVars are the launchers' variables for a process's rank on its
// host, read in this order: the innermost launcher first, because an
// outer one's variables are inherited by everything it starts. torchrun
// (LOCAL_RANK) starts its workers itself and is always innermost;
// mpirun or mpiexec inside a Slurm allocation starts its daemons with
// srun, one task per host, so every MPI process there inherits
// SLURM_LOCALID=0 and only the MPI variables tell them apart (Open MPI:
// OMPI_COMM_WORLD_LOCAL_RANK; MPICH Hydra and Intel MPI:
// MPI_LOCALRANKID; Cray PALS: PALS_LOCAL_RANKID). SLURM_LOCALID is
// right only for processes srun starts directly, so it comes last.
var LocalRankVars = []string{"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PALS_LOCAL_RANKID", "SLURM_LOCALID"}

// localRank returns the process's rank on its host from the launcher's
// variables, and which variable gave it; ok is false when none is set (a
// process started by hand, or several independent processes).
func localRank(getenv func(string) (string, bool)) (rank int, from string, ok bool) {
	for _, v := range LocalRankVars {
		s, set := getenv(v)
		if !set || strings.TrimSpace(s) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			continue
		}
		return n, v, true
	}
	return 0, "", false
}

// Leader is this process's claim to be its host's leader: the one process
// per host that runs XLA's autotune cache in UPDATE mode and, when it is
// also the job's writer, publishes.
type Leader struct {
	// Is reports whether this process leads its host.
	Is bool
	// Why says how that was decided, for the log.
	Why  string
	lock *lockedfile.File
}

// Release gives the leadership up (at exit).
func (l *Leader) Release() {
	if l.lock != nil {
		_ = l.lock.Unlock()
		l.lock = nil
	}
}

// ElectLeader decides whether this process leads its host. A process
// whose launcher gives it a local rank other than 0 never leads. Every
// other one (local rank 0, or no local rank: a process started by hand,
// or several independent processes, each JAX's process 0) leads only
// while it holds an exclusive lock in the directory's state, so that
// exactly one process leads a directory at any time, even when two jobs
// (two srun steps, two sweeps) share a host and each has a local rank 0.
// The lock is released by the kernel when its holder dies, so a crashed
// leader leaves no stale claim. A local rank 0 that cannot take the lock
// for any reason but another holder (no state directory, say) still
// leads, as its launcher says.
func ElectLeader(o Options, getenv func(string) (string, bool)) *Leader {
	r, v, ranked := localRank(getenv)
	if ranked && r != 0 {
		return &Leader{Why: fmt.Sprintf("%s=%d", v, r)}
	}
	why := "holds the host lock"
	if ranked {
		why = fmt.Sprintf("%s=%d, holds the host lock", v, r)
	}
	if err := ensureState(o); err != nil {
		o.logger().Warn("xlacache exec: no state directory for the host lock; leadership falls back to the launcher's local rank", "err", err)
		if ranked {
			return &Leader{Is: true, Why: fmt.Sprintf("%s=%d (no host lock: %v)", v, r, err)}
		}
		return &Leader{Why: "no state directory: " + err.Error()}
	}
	lk, err := lockedfile.TryLock(leaderLockRel, lockedfile.Options{Root: o.Root, Perm: fileMode(o.FileMode)})
	if err != nil && !errors.Is(err, lockedfile.ErrLocked) {
		o.logger().Warn("xlacache exec: the host lock is unusable; leadership falls back to the launcher's local rank", "err", err)
	}
	switch {
	case err == nil:
		return &Leader{Is: true, Why: why, lock: lk}
	case errors.Is(err, lockedfile.ErrLocked):
		if ranked {
			return &Leader{Why: fmt.Sprintf("%s=%d, but another job's process holds the host lock", v, r)}
		}
		return &Leader{Why: "another process holds the host lock"}
	case ranked:
		return &Leader{Is: true, Why: fmt.Sprintf("%s=%d (no host lock: %v)", v, r, err)}
	default:
		return &Leader{Why: "host lock unusable: " + err.Error()}
	}
}

func fileMode(m os.FileMode) os.FileMode {
	if m == 0 {
		return 0o600
	}
	return m
}

// FillResult is what CoordinatedFill did.
type FillResult struct {
	// Filled is true when this process ran the fill; false when another
	// process on the host had just done it (or the wait ran out).
	Filled bool
	// Stats is what the fill did (zero when Filled is false).
	Stats FillStats
	// Waited is how long this process waited for another one's fill.
	Waited time.Duration
}

// CoordinatedFill fills the directory once per host: every process of the
// host takes the fill lock in turn (waiting at most wait); the first runs
// the fill, bounded by wait too (2 minutes when wait is 0), and leaves a
// marker with its end time;
// one that then finds a marker newer than its own start (started is when
// it began) uses that fill instead of fetching again. Store failures are
// returned, but the marker is still left, so that the host's other
// processes do not each wait out the same unreachable store.
func CoordinatedFill(ctx context.Context, store blob.Store, o Options, started time.Time, wait time.Duration) (FillResult, error) {
	var res FillResult
	if err := ensureState(o); err != nil {
		return res, err
	}
	t0 := time.Now()
	lk, err := lockedfile.LockWait(ctx, fillLockRel, lockedfile.Options{Root: o.Root, Perm: fileMode(o.FileMode)}, wait)
	res.Waited = time.Since(t0)
	if err != nil {
		return res, fmt.Errorf("waiting for this host's fill: %w", err)
	}
	defer lk.Unlock()
	// The lock file itself holds the end time of the last fill: read and
	// written only under the lock, and not worth an fsync.
	var mark [8]byte
	if n, _ := lk.ReadAt(mark[:], 0); n == len(mark) {
		done := time.Unix(0, int64(binary.LittleEndian.Uint64(mark[:])))
		if done.After(started) {
			return res, nil
		}
	}
	fctx, cancel := context.WithTimeout(ctx, fillBound(wait))
	defer cancel()
	res.Filled = true
	res.Stats, err = fill(fctx, store, o)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("fill cut short after %v (XLACACHE_WAIT_SECS): %w", fillBound(wait), err)
	}
	binary.LittleEndian.PutUint64(mark[:], uint64(time.Now().UnixNano()))
	if _, merr := lk.WriteAt(mark[:], 0); merr != nil {
		err = errors.Join(err, fmt.Errorf("writing the fill marker: %w", merr))
	}
	return res, err
}

// fillBound is how long a fill may run: as long as the host's other
// processes wait for it, and 2 minutes when they do not wait at all
// (XLACACHE_WAIT_SECS=0).
func fillBound(wait time.Duration) time.Duration {
	if wait <= 0 {
		return 2 * time.Minute
	}
	return wait
}
