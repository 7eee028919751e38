package cc

/*
#cgo LDFLAGS: -pthread
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void (*xk_pool_pfn)(void**, int64_t, int64_t);

// One parallel kernel call. It lives on its caller's C stack: the caller
// unlinks it and waits until every worker that joined it has left before
// returning, so no worker touches it afterwards.
typedef struct xk_job {
	xk_pool_pfn fn;
	void** bufs;
	int64_t n;
	atomic_llong next;     // the next part to claim
	int helpers;           // workers still wanted (under xk_pool_mu)
	atomic_int joined;     // workers in the job now (changed under xk_pool_mu)
	int queued;            // still on the queue (under xk_pool_mu)
	struct xk_job* link;   // the next queued job (under xk_pool_mu)
} xk_job;

static pthread_mutex_t xk_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t xk_pool_work = PTHREAD_COND_INITIALIZER; // a job was queued
static pthread_cond_t xk_pool_left = PTHREAD_COND_INITIALIZER; // a worker left its job
static xk_job* xk_pool_head = NULL;
static xk_job* xk_pool_tail = NULL;
static int xk_pool_idle = 0;                 // workers blocked on xk_pool_work (changed under xk_pool_mu; xk_pool_may_spin reads it without)
static atomic_int xk_pool_jobs = 0;          // jobs on the queue (changed under xk_pool_mu)
static atomic_int xk_pool_spinning = 0;      // workers in their spin phase

// XK_POOL_SPIN_NS is how long a worker looks for the next job, and a
// caller for its workers to finish, before blocking; XK_POOL_GAP_NS the
// yield that ends a spin early (another thread ran on this core);
// XK_POOL_CHECK_NS how often xk_pool_may_spin reads the machine's load.
#define XK_POOL_SPIN_NS 200000
#define XK_POOL_GAP_NS 500000
#define XK_POOL_CHECK_NS 2000000

static void xk_pool_parts(xk_job* j) {
	for (;;) {
		int64_t t = atomic_fetch_add(&j->next, 1);
		if (t >= j->n) return;
		j->fn(j->bufs, t, j->n);
	}
}

// xk_pool_unlink takes j off the queue (under xk_pool_mu).
static void xk_pool_unlink(xk_job* j) {
	xk_job* prev = NULL;
	for (xk_job* q = xk_pool_head; q; prev = q, q = q->link) {
		if (q != j) continue;
		if (prev) prev->link = j->link; else xk_pool_head = j->link;
		if (xk_pool_tail == j) xk_pool_tail = prev;
		break;
	}
	j->queued = 0;
	atomic_fetch_sub(&xk_pool_jobs, 1);
}

// xk_pool_now is CLOCK_MONOTONIC in nanoseconds (a vDSO call, no system
// call), for the spin phases' deadlines.
static int64_t xk_pool_now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// xk_pool_running returns how many threads the whole machine has
// running or ready to run now (the fourth field of /proc/loadavg), or -1
// where that cannot be read.
static int xk_pool_running(void) {
	char b[128];
	int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, b, sizeof b - 1);
	close(fd);
	if (n <= 0) return -1;
	b[n] = 0;
	char* p = b;
	for (int f = 0; f < 3; f++) {
		p = strchr(p, ' ');
		if (!p) return -1;
		p++;
	}
	return atoi(p);
}

// xk_pool_spin_rule is the verdict on one reading: running threads
// (running, the machine's running or ready threads, the reader
// included), counting as running the idle workers the latest call wanted
// (what spinning would add), may exceed the CPUs by one. Where there are
// more, a spinning thread takes time from threads with work (ours among
// them), and a blocked one, once woken, is run ahead of those that kept
// running. The one-thread slack is for threads that run briefly and
// often: on a quiet 2-CPU VM, a quarter of readings caught a third
// thread (most likely the Go runtime's sysmon, which strace showed
// waking every 20 us while a goroutine was in C; or a kernel thread),
// and each such reading stopped the spinning for the next
// XK_POOL_CHECK_NS: the embedding example's 2-thread run then took
// 1.2-1.65 ms a run by how often, against 1.1-1.3 spinning throughout. A steady extra thread is within
// the slack too, and a spinner that shares its core with it sees its
// yields take long and stops (XK_POOL_GAP_NS); two are not.
static int xk_pool_spin_rule(int running, int idle, int wanted, int cpus) {
	if (running <= 0) return 0;
	if (idle > wanted) idle = wanted;
	return running + idle <= cpus + 1;
}

// xk_pool_may_spin says whether the machine has a core to spare for a
// thread that spins (xk_pool_spin_rule). The count is read at most every
// XK_POOL_CHECK_NS, by whichever thread finds it stale.
static atomic_llong xk_pool_checked_at = 0;
static atomic_int xk_pool_wanted = 0; // helpers the latest call asked for
static atomic_int xk_pool_spin_ok = 0;
static atomic_int xk_pool_spin_force = 0; // tests: 1 always spins, -1 never
static int xk_pool_may_spin(int64_t now) {
	int force = atomic_load_explicit(&xk_pool_spin_force, memory_order_relaxed);
	if (force) return force > 0;
	int64_t at = atomic_load_explicit(&xk_pool_checked_at, memory_order_relaxed);
	if (now - at < XK_POOL_CHECK_NS) return atomic_load_explicit(&xk_pool_spin_ok, memory_order_relaxed);
	if (!atomic_compare_exchange_strong(&xk_pool_checked_at, &at, now)) return atomic_load_explicit(&xk_pool_spin_ok, memory_order_relaxed);
	static long cpus = 0;
	if (cpus == 0) cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int ok = xk_pool_spin_rule(xk_pool_running(), __atomic_load_n(&xk_pool_idle, __ATOMIC_RELAXED),
		atomic_load_explicit(&xk_pool_wanted, memory_order_relaxed), (int)cpus);
	atomic_store_explicit(&xk_pool_spin_ok, ok, memory_order_relaxed);
	return ok;
}

// xk_pool_spin waits while *v is zero (while_set 0) or not zero
// (while_set 1), for at most XK_POOL_SPIN_NS, yielding the core between
// looks, where xk_pool_may_spin allows. A yield that took more than
// XK_POOL_GAP_NS (another thread ran on this core) ends the spin too.
static void xk_pool_spin(atomic_int* v, int while_set) {
	int64_t t = xk_pool_now();
	if (!xk_pool_may_spin(t)) return;
	int64_t end = t + XK_POOL_SPIN_NS;
	while ((atomic_load_explicit(v, memory_order_acquire) != 0) == while_set) {
		sched_yield();
		int64_t u = xk_pool_now();
		if (u >= end || u - t > XK_POOL_GAP_NS) return;
		t = u;
	}
}

// xk_pool_worker is a worker's whole life: it spins for up to
// XK_POOL_SPIN_NS for a job, then blocks until one is queued, runs parts
// of it until none is left, and starts over.
static void xk_pool_worker(void) {
	for (;;) {
		atomic_fetch_add(&xk_pool_spinning, 1);
		xk_pool_spin(&xk_pool_jobs, 0);
		// Stop counting as spinning before looking at the queue under
		// the mutex: a caller that still counted this worker as
		// spinning (and so did not signal it) queued its job before
		// this worker takes the mutex, and this worker then sees it.
		atomic_fetch_sub(&xk_pool_spinning, 1);
		pthread_mutex_lock(&xk_pool_mu);
		while (!xk_pool_head) {
			__atomic_add_fetch(&xk_pool_idle, 1, __ATOMIC_RELAXED); // read outside the mutex too
			pthread_cond_wait(&xk_pool_work, &xk_pool_mu);
			__atomic_sub_fetch(&xk_pool_idle, 1, __ATOMIC_RELAXED);
		}
		xk_job* j = xk_pool_head;
		atomic_fetch_add(&j->joined, 1);
		if (--j->helpers <= 0) xk_pool_unlink(j);
		pthread_mutex_unlock(&xk_pool_mu);
		xk_pool_parts(j);
		pthread_mutex_lock(&xk_pool_mu);
		// The last access to j: its caller may return as soon as it
		// reads joined at 0.
		if (atomic_fetch_sub(&j->joined, 1) == 1) pthread_cond_broadcast(&xk_pool_left);
		pthread_mutex_unlock(&xk_pool_mu);
	}
}

static void xk_pool_run(void* fn, void** bufs, int64_t n, int helpers) {
	xk_job j;
	j.fn = (xk_pool_pfn)fn;
	j.bufs = bufs;
	j.n = n;
	atomic_init(&j.next, 0);
	atomic_init(&j.joined, 0);
	j.queued = 0;
	j.link = NULL;
	if (helpers > n - 1) helpers = n - 1;
	j.helpers = helpers;
	if (helpers > 0) {
		atomic_store_explicit(&xk_pool_wanted, helpers, memory_order_relaxed);
		pthread_mutex_lock(&xk_pool_mu);
		j.queued = 1;
		if (xk_pool_tail) xk_pool_tail->link = &j; else xk_pool_head = &j;
		xk_pool_tail = &j;
		atomic_fetch_add(&xk_pool_jobs, 1);
		// Wake as many idle workers as the job wants beyond those
		// spinning, no more: a worker woken for nothing takes a core
		// from whatever else runs. The signals follow the unlock, so
		// that a woken worker does not block at once on the mutex this
		// thread still holds; a worker counted idle is already waiting,
		// and one that is not checks the queue before it waits, so none
		// is missed.
		int wake = helpers - atomic_load(&xk_pool_spinning);
		if (wake > xk_pool_idle) wake = xk_pool_idle;
		pthread_mutex_unlock(&xk_pool_mu);
		for (int i = 0; i < wake; i++) pthread_cond_signal(&xk_pool_work);
	}
	xk_pool_parts(&j);
	if (helpers > 0) {
		pthread_mutex_lock(&xk_pool_mu);
		if (j.queued) xk_pool_unlink(&j);
		pthread_mutex_unlock(&xk_pool_mu);
		xk_pool_spin(&j.joined, 1);
		if (atomic_load(&j.joined) > 0) {
			pthread_mutex_lock(&xk_pool_mu);
			while (atomic_load(&j.joined) > 0) pthread_cond_wait(&xk_pool_left, &xk_pool_mu);
			pthread_mutex_unlock(&xk_pool_mu);
		}
	}
}

// xk_pool_test_part is a part function for the pool's tests: it counts
// its part in ((atomic_llong*)bufs[0])[t], checks n against
// *(int64_t*)bufs[1] (counting a mismatch in ((atomic_llong*)bufs[0])[n]),
// then works: for *(int64_t*)bufs[2] nanoseconds when that is positive,
// else a loop as long as t % 5 says (uneven parts: some finish later).
static void xk_pool_test_part(void** bufs, int64_t t, int64_t n) {
	atomic_llong* counts = (atomic_llong*)bufs[0];
	if (n != *(int64_t*)bufs[1]) atomic_fetch_add(&counts[n], 1);
	atomic_fetch_add(&counts[t], 1);
	int64_t ns = *(int64_t*)bufs[2];
	if (ns > 0) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		do clock_gettime(CLOCK_MONOTONIC, &b);
		while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < ns);
		return;
	}
	volatile int64_t x = 0;
	for (int64_t i = 0; i < (t % 5) * 2000; i++) x += i;
}
static void xk_pool_set_spin(int mode) { atomic_store(&xk_pool_spin_force, mode); }
static int xk_pool_test_rule(int running, int idle, int wanted, int cpus) { return xk_pool_spin_rule(running, idle, wanted, cpus); }
static void* xk_pool_test_fn(void) { return (void*)xk_pool_test_part; }
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The pool runs the parts of parallel kernels on threads that wait in C,
// not on goroutines. Waking a goroutine takes the Go scheduler two thread
// hand-offs (a spinning thread steals the goroutine from the caller's
// processor, then hands that processor to the goroutine's locked thread,
// after backing off a few microseconds that the kernel's timer slack makes
// about 50): the second part of a two-part call on this 2-core VM started
// a median 70 µs after the call against 10 µs for a C thread woken through
// a condition variable, longer than the whole of many small kernels. The
// worker threads are still started (and owned) by the Go runtime: each is
// a goroutine locked to its thread inside a cgo call that never returns,
// so no generated library starts threads and none can be unloaded under
// one (a call's library stays loaded until the call returns).
var pool struct {
	mu      sync.Mutex
	started atomic.Int64 // written under mu
}

// StartWorkers starts pool workers until n are running. Workers never
// exit; an idle one is an OS thread blocked on a condition variable.
// Every parallel kernel call asks, so the common case (enough running)
// takes no lock.
func StartWorkers(n int) {
	if pool.started.Load() >= int64(n) {
		return
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for ; pool.started.Load() < int64(n); pool.started.Add(1) {
		go func() {
			runtime.LockOSThread()
			C.xk_pool_worker()
		}()
	}
}

// RunParts runs parts 0..n-1 of the parallel kernel fn (the ABI of
// CallPart) on bufs: on the calling thread and on up to helpers pool
// workers (started with StartWorkers) that are idle or become so before
// the parts run out. It returns when every part has run, once. The caller
// runs parts too, so a call no worker picks up (all busy with other
// calls, or not yet started) still finishes, and callers never wait on
// one another: concurrent calls cannot deadlock and never put more than
// the pool's threads plus the callers to work.
func RunParts(fn, bufs unsafe.Pointer, n, helpers int) {
	C.xk_pool_run(fn, (*unsafe.Pointer)(bufs), C.int64_t(n), C.int(helpers))
}

// setSpin makes workers and callers always spin before they block (mode
// 1), never (-1), or spin where the machine has a core to spare (0, the
// default), so that the pool's tests cover both ways of handing over a
// call whatever the machine's load.
func setSpin(mode int) { C.xk_pool_set_spin(C.int(mode)) }

// spinRule is xk_pool_spin_rule, for the pool's tests.
func spinRule(running, idle, wanted, cpus int) bool {
	return C.xk_pool_test_rule(C.int(running), C.int(idle), C.int(wanted), C.int(cpus)) != 0
}

// testPartFn is xk_pool_test_part, for the pool's tests (cgo cannot be
// used in test files).
func testPartFn() unsafe.Pointer { return C.xk_pool_test_fn() }
