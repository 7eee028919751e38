package hostfill

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/lockedfile"
)

// noLauncher is the environment of a process no launcher started.
func noLauncher(string) (string, bool) { return "", false }

// TestLocalRankInnermostLauncherWins: a launcher started inside another
// one (torchrun or mpirun inside a Slurm allocation) inherits the outer
// one's variables, which are the same for every process it starts; the
// inner launcher's variables decide.
func TestLocalRankInnermostLauncherWins(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		rank int
		from string
	}{
		// mpirun inside salloc: orted was started by srun, one per host.
		{map[string]string{"SLURM_LOCALID": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "3"}, 3, "OMPI_COMM_WORLD_LOCAL_RANK"},
		// MPICH / Intel MPI mpiexec inside salloc.
		{map[string]string{"SLURM_LOCALID": "0", "MPI_LOCALRANKID": "2"}, 2, "MPI_LOCALRANKID"},
		// srun torchrun: one torchrun per host.
		{map[string]string{"SLURM_LOCALID": "0", "LOCAL_RANK": "5"}, 5, "LOCAL_RANK"},
		// Cray PALS (aprun/mpiexec on HPE Cray EX).
		{map[string]string{"SLURM_LOCALID": "0", "PALS_LOCAL_RANKID": "1"}, 1, "PALS_LOCAL_RANKID"},
		// srun alone.
		{map[string]string{"SLURM_LOCALID": "4"}, 4, "SLURM_LOCALID"},
		// A bad value is passed over, not taken as 0.
		{map[string]string{"LOCAL_RANK": "x", "SLURM_LOCALID": "6"}, 6, "SLURM_LOCALID"},
	} {
		get := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		r, from, ok := localRank(get)
		if !ok || r != tc.rank || from != tc.from {
			t.Errorf("%v: rank %d from %s (%v), want %d from %s", tc.env, r, from, ok, tc.rank, tc.from)
		}
	}
}

// TestLocalRank reads the launchers' local-rank variables in order.
func TestLocalRank(t *testing.T) {
	env := map[string]string{"LOCAL_RANK": "3", "MPI_LOCALRANKID": "1"}
	get := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if r, v, ok := localRank(get); !ok || r != 3 || v != "LOCAL_RANK" {
		t.Errorf("rank %d from %s (%v)", r, v, ok)
	}
	env = map[string]string{"SLURM_LOCALID": "x"}
	if _, _, ok := localRank(get); ok {
		t.Error("a bad value was used")
	}
}

// TestElectLeaderOnePerDirectory: of two processes with local rank 0 on
// one directory (two job steps sharing a host) only one leads; a process
// with another local rank never leads and takes no lock; once the leader
// is gone the next local rank 0 leads.
func TestElectLeaderOnePerDirectory(t *testing.T) {
	h := newHost(t, nil)
	rank := func(r string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "SLURM_LOCALID" {
				return r, true
			}
			return "", false
		}
	}
	first := ElectLeader(h.o, rank("0"))
	defer first.Release()
	if !first.Is {
		t.Fatalf("first local rank 0 does not lead: %s", first.Why)
	}
	second := ElectLeader(h.o, rank("0"))
	defer second.Release()
	if second.Is {
		t.Fatalf("a second local rank 0 leads the same directory: %s", second.Why)
	}
	other := ElectLeader(h.o, rank("1"))
	if other.Is || other.lock != nil {
		t.Fatalf("local rank 1 leads or holds the lock: %+v", other)
	}
	none := ElectLeader(h.o, func(string) (string, bool) { return "", false })
	if none.Is {
		t.Fatalf("an unranked process leads while another holds the lock: %s", none.Why)
	}
	first.Release()
	third := ElectLeader(h.o, rank("0"))
	defer third.Release()
	if !third.Is {
		t.Fatalf("no leader after the first one left: %s", third.Why)
	}
}

// envHoldFillLock makes the test binary a process that takes the host's
// fill lock in the directory named, says so, and then hangs, as a leader
// stuck or killed mid-fill does.
const envHoldFillLock = "HOSTFILL_TEST_HOLD_FILL_LOCK"

// TestCoordinatedFillLeaderKilledMidFill: while another process holds the
// fill lock, a waiting process gives up after its bound (it does not wait
// forever); once the holder is killed (SIGKILL, no clean-up) the lock is
// free and the next process fills itself.
func TestCoordinatedFillLeaderKilledMidFill(t *testing.T) {
	if dir := os.Getenv(envHoldFillLock); dir != "" {
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Root: root}
		if err := ensureState(o); err != nil {
			t.Fatal(err)
		}
		if _, err := lockedfile.TryLock(fillLockRel, lockedfile.Options{Root: root, Perm: 0o600}); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("locked\n")
		select {} // until killed
	}
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	a := newHost(t, nil)
	a.write(t, autotuneName(0), []byte("results { a: 1 }\n"))
	if err := newPublisher(store, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	b := newHost(t, nil)

	cmd := exec.Command(os.Args[0], "-test.run=^TestCoordinatedFillLeaderKilledMidFill$")
	cmd.Env = append(os.Environ(), envHoldFillLock+"="+b.path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("holder: %q %v", line, err)
	}

	started := time.Now()
	res, err := CoordinatedFill(ctx, store, b.o, started, 50*time.Millisecond)
	if !errors.Is(err, lockedfile.ErrLocked) || res.Filled {
		t.Fatalf("with the lock held elsewhere: %+v %v; want a bounded wait ending in ErrLocked", res, err)
	}
	if _, ok := b.read(t, autotuneName(0)); ok {
		t.Fatal("filled while another process held the fill lock")
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	res, err = CoordinatedFill(ctx, store, b.o, started, 30*time.Second)
	if err != nil || !res.Filled {
		t.Fatalf("after the holder died: %+v %v", res, err)
	}
	if got, ok := b.read(t, autotuneName(0)); !ok || string(got) != "results { a: 1 }\n" {
		t.Errorf("not filled after the holder died: %q %v", got, ok)
	}
	if _, err := os.Stat(filepath.Join(b.path, filepath.FromSlash(fillLockRel))); err != nil {
		t.Errorf("fill lock: %v", err)
	}
}
