package cache

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/entry"
)

// Child processes re-execute the test binary with -test.run=^TestProcChild$
// and these variables.
const (
	procChildEnv = "XLACACHE_TEST_PROC_CHILD" // "mp-writer", "mp-reader", "kill"
	procIDEnv    = "XLACACHE_TEST_PROC_ID"
	procDirEnv   = "XLACACHE_TEST_PROC_DIR"
	procKeysEnv  = "XLACACHE_TEST_PROC_KEYS"
)

// procPayload is the payload every process stores for key text k: its
// length (1 KiB .. 256 KiB) and bytes derive from k, so any process can
// check what it reads.
func procPayload(k string) []byte {
	sum := sha256.Sum256([]byte(k))
	n := 1024 + int(binary.LittleEndian.Uint32(sum[:4])%(255<<10))
	out := make([]byte, 0, n+32)
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

func procKey(space string, i int) Key {
	return NewKey("mp_"+space, []KeyPart{{Name: "i", Data: []byte(strconv.Itoa(i))}})
}

// TestProcChild is the body of child processes; it is skipped in a normal
// run.
func TestProcChild(t *testing.T) {
	mode := os.Getenv(procChildEnv)
	if mode == "" {
		t.Skip("runs only as a child process of the multi-process tests")
	}
	id := os.Getenv(procIDEnv)
	o := testOptions(os.Getenv(procDirEnv))
	o.WaitTimeout = 0
	if ms := os.Getenv(config.EnvMaxSize); ms != "" {
		o.MaxSize, _ = config.ParseSize(ms)
	}
	ctx := context.Background()
	switch mode {
	case "mp-writer", "mp-reader":
		if mode == "mp-reader" {
			o.Role = config.RoleReader
		} else {
			o.Role = config.RoleWriter
		}
		c, err := Open(ctx, o, newTestLogger(os.Stderr))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(os.Getenv(procKeysEnv))
		tier := c.Tier(ExecutablesTier)
		r := rand.New(rand.NewPCG(uint64(len(id)), uint64(time.Now().UnixNano())))
		hits := 0
		for round := 0; round < 3; round++ {
			for _, i := range r.Perm(n) {
				for _, k := range []Key{procKey("shared", i), procKey("own"+id, i)} {
					if mode == "mp-reader" && strings.HasPrefix(k.Module, "mp_own") {
						continue
					}
					got, ok := tier.Get(ctx, k)
					if ok {
						hits++
						if !bytes.Equal(got, procPayload(k.String())) {
							fmt.Printf("WRONG %s\n", k)
							os.Exit(3)
						}
						continue
					}
					if mode == "mp-writer" {
						if err := tier.Put(ctx, k, procPayload(k.String()), time.Second); err != nil {
							fmt.Printf("PUTERR %s %v\n", k, err)
							os.Exit(4)
						}
					}
				}
			}
		}
		st := c.Stats()
		c.Close()
		if len(st.Errors) != 0 {
			fmt.Printf("ERRORS %v\n", st.Errors)
			os.Exit(5)
		}
		fmt.Printf("OK hits=%d\n", hits)
	case "kill":
		o.Role = config.RoleWriter
		c, err := Open(ctx, o, newTestLogger(io.Discard))
		if err != nil {
			t.Fatal(err)
		}
		tier := c.Tier(ExecutablesTier)
		fmt.Println("READY")
		for i := 0; ; i++ {
			k := procKey("kill"+id, i)
			tier.Put(ctx, k, procPayload(k.String()), time.Second)
			// Reads too, so kills also land mid-read and mid-quarantine.
			tier.Get(ctx, procKey("kill"+id, i/2))
		}
	}
}

func childCmd(t testing.TB, mode, id, dir string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcChild$", "-test.count=1")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XLACACHE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, procChildEnv+"="+mode, procIDEnv+"="+id, procDirEnv+"="+dir)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

// checkAllEntries verifies every entry file in dir's executables tier: each
// must decode, carry the key of its file name and the payload for it.
func checkAllEntries(t testing.TB, dir string) int {
	t.Helper()
	files, _, err := scanFilesAt(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if f.class.Area != ExecutablesDir {
			continue
		}
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		e, err := entry.Decode(data, nil)
		if err != nil {
			t.Fatalf("entry %s does not verify: %v", f.rel, err)
		}
		if e.Key != filepath.Base(f.path) || !bytes.Equal(e.Payload, procPayload(e.Key)) {
			t.Fatalf("entry %s verifies but holds the wrong payload", f.rel)
		}
		n++
	}
	return n
}

// TestMultiProcess runs 6 writer and 2 reader processes on one directory,
// all getting and putting an overlapping key set: no process may read a
// partial or wrong entry, and no write may be lost.
func TestMultiProcess(t *testing.T) {
	dir := t.TempDir()
	const keys = 60
	var wg sync.WaitGroup
	outs := make([][]byte, 8)
	errs := make([]error, 8)
	for p := 0; p < 8; p++ {
		mode := "mp-writer"
		if p >= 6 {
			mode = "mp-reader"
		}
		cmd := childCmd(t, mode, strconv.Itoa(p), dir, procKeysEnv+"="+strconv.Itoa(keys))
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			outs[p], errs[p] = cmd.CombinedOutput()
		}(p)
	}
	wg.Wait()
	for p := range outs {
		if errs[p] != nil || !bytes.Contains(outs[p], []byte("OK hits=")) {
			t.Errorf("process %d: %v\n%s", p, errs[p], outs[p])
		}
	}
	// Nothing lost: every shared key and every writer's own keys are there.
	o := testOptions(dir)
	o.Role = config.RoleReader
	c := mustOpen(t, o, nil)
	tier := c.Tier(ExecutablesTier)
	ctx := context.Background()
	for i := 0; i < keys; i++ {
		want := []Key{procKey("shared", i)}
		for p := 0; p < 6; p++ {
			want = append(want, procKey("own"+strconv.Itoa(p), i))
		}
		for _, k := range want {
			if got, ok := tier.Get(ctx, k); !ok || !bytes.Equal(got, procPayload(k.String())) {
				t.Fatalf("entry %s lost or wrong (hit=%v)", k, ok)
			}
		}
	}
	if n := checkAllEntries(t, dir); n != keys*7 {
		t.Errorf("%d entries, want %d", n, keys*7)
	}
	// The ledger counted each entry once, however many writers raced.
	u, _ := Scan(ctx, dir)
	if total, _ := ledgerTotal(t, dir); total != u.Bytes {
		t.Errorf("ledger %d, scanned %d", total, u.Bytes)
	}
}

// TestKillDuringWrites SIGKILLs writer processes at random points (20
// rounds of 10 concurrent processes: 200 kills; XLACACHE_TEST_KILL_TRIALS
// sets the number of kills, rounded up to a multiple of 10, or
// XLACACHE_TEST_KILL_ROUNDS the rounds) with a size bound that keeps trims
// running, then checks that every entry left behind verifies and holds the
// right payload (a bad read fails the test at once), and that a writer
// opened afterwards works and cleans up. For the hardening figure:
//
//	XLACACHE_TEST_KILL_TRIALS=1000 go test -count=1 -v -run '^TestKillDuringWrites$' -timeout 30m ./cache/
func TestKillDuringWrites(t *testing.T) {
	rounds := 20
	if v := os.Getenv("XLACACHE_TEST_KILL_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("XLACACHE_TEST_KILL_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}
	if v := os.Getenv("XLACACHE_TEST_KILL_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("XLACACHE_TEST_KILL_TRIALS=%q: want a positive number", v)
		}
		rounds = (n + 9) / 10
	}
	dir := t.TempDir()
	kills, reads := killRoundsCounted(t, dir, rounds)
	if kills != rounds*10 {
		t.Fatalf("only %d of %d kills landed in a write loop", kills, rounds*10)
	}
	// A writer opened afterwards reads everything, stores, and its prune
	// removes nothing that verifies wrongly.
	o := testOptions(dir)
	o.MaxSize = 8 << 20
	c := mustOpen(t, o, nil)
	k := procKey("after", 1)
	if err := c.Tier(ExecutablesTier).Put(context.Background(), k, procPayload(k.String()), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prune(context.Background(), 8<<20, false); err != nil {
		t.Fatal(err)
	}
	n := checkAllEntries(t, dir)
	reads += n
	t.Logf("%d kills, %d entries survive; %d entry reads checked after the rounds, 0 bad", kills, n, reads)
	if n == 0 {
		t.Error("no entry survived: the children never wrote")
	}
}

// killRounds runs rounds of 10 concurrent writer processes, each killed
// with SIGKILL at a random point of its write loop, checking every entry
// after each round. It returns the number of kills that landed while the
// child was in its write loop.
func killRounds(t testing.TB, dir string, rounds int) int {
	kills, _ := killRoundsCounted(t, dir, rounds)
	return kills
}

// killRoundsCounted is killRounds that also returns how many entry reads
// the checks after each round verified.
func killRoundsCounted(t testing.TB, dir string, rounds int) (kills, reads int) {
	const perRound = 10
	r := rand.New(rand.NewPCG(42, uint64(time.Now().UnixNano())))
	var killed atomic.Int64
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		for p := 0; p < perRound; p++ {
			id := fmt.Sprintf("%d_%d", round, p)
			cmd := childCmd(t, "kill", id, dir, config.EnvMaxSize+"=8MiB")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			delay := time.Duration(r.IntN(30000)) * time.Microsecond
			wg.Add(1)
			go func() {
				defer wg.Done()
				line, _ := bufio.NewReader(stdout).ReadString('\n')
				if strings.TrimSpace(line) == "READY" {
					<-time.After(delay) // a random point in the write loop
					killed.Add(1)
				}
				cmd.Process.Signal(syscall.SIGKILL)
				err := cmd.Wait()
				if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Errorf("child %s did not die by SIGKILL: %v", id, err)
				}
			}()
		}
		wg.Wait()
		reads += checkAllEntries(t, dir)
	}
	return int(killed.Load()), reads
}

// BenchmarkKillTrials runs b.N more rounds of 10 SIGKILL trials (use
// -benchtime 50x for 500 kills).
func BenchmarkKillTrials(b *testing.B) {
	dir := b.TempDir()
	kills := killRounds(b, dir, b.N)
	b.ReportMetric(float64(kills)/float64(b.N), "kills/op")
}
