package jobrun

import (
	"context"
	"io"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/hostfill"
)

// Kinds of failure a run counts in Report.Errors, one per step that can
// fail without stopping the command.
const (
	errDir         = "dir"          // the cache directory is unusable
	errAutotuneDir = "autotune_dir" // creating XLA's autotune directory
	errFill        = "fill"         // filling from the shared tier
	errXLAFlags    = "xla_flags"    // reading an XLA_FLAGS file
	errEnv         = "env"          // working out the command's environment
	errList        = "list"         // listing the shared tier's packs
	errPublish     = "publish"      // publishing to the shared tier
	errPrune       = "prune"        // bounding the local directory at exit
	errJAXLink     = "jax_link"     // the one path JAX is given on every host
	errJAXWatch    = "jax_watch"    // recording what JAX loaded and wrote
)

// Snapshot returns the run's report so far: while the command runs, the
// fill's result, the publishes so far, the requests and failures; after
// Run returns, what it returned. Safe to call from any goroutine (a
// metrics writer's).
func (j *Job) Snapshot() Report { return j.live.snapshot() }

// liveReport is a run's report as it grows, for Snapshot.
type liveReport struct {
	mu       sync.Mutex
	rep      Report
	errors   map[string]int
	pub      *hostfill.Publisher
	requests atomic.Int64
	done     bool
}

// start wraps store (nil: none) so that its requests are counted.
func (l *liveReport) start(store blob.Store) blob.Store {
	if store == nil {
		return nil
	}
	return &requestCounter{Store: store, n: &l.requests}
}

func (l *liveReport) set(rep Report) {
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := l.rep.Errors
	l.rep = rep
	l.rep.Errors = errs
}

func (l *liveReport) setPublisher(p *hostfill.Publisher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pub = p
}

func (l *liveReport) addError(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errors == nil {
		l.errors = map[string]int{}
	}
	l.errors[kind]++
}

// finish completes rep with the counters and keeps it as the final
// snapshot.
func (l *liveReport) finish(rep *Report) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rep.Requests = l.requests.Load()
	rep.Errors = maps.Clone(l.errors)
	l.rep = *rep
	l.done = true
}

func (l *liveReport) snapshot() Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	rep := l.rep
	if !l.done {
		if l.pub != nil {
			rep.Publish = l.pub.Stats()
		}
		rep.Requests = l.requests.Load()
		rep.Errors = maps.Clone(l.errors)
	}
	if rep.Errors == nil {
		rep.Errors = map[string]int{}
	}
	return rep
}

// requestCounter counts the requests made to a store.
type requestCounter struct {
	blob.Store
	n *atomic.Int64
}

func (c *requestCounter) Get(ctx context.Context, name string) ([]byte, error) {
	c.n.Add(1)
	return c.Store.Get(ctx, name)
}

func (c *requestCounter) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	c.n.Add(1)
	return c.Store.Open(ctx, name)
}

func (c *requestCounter) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	c.n.Add(1)
	return c.Store.PutIfAbsent(ctx, name, data)
}

func (c *requestCounter) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	c.n.Add(1)
	return c.Store.ReplaceIfMatch(ctx, name, etag, data)
}

func (c *requestCounter) Stat(ctx context.Context, name string) (blob.Info, error) {
	c.n.Add(1)
	return c.Store.Stat(ctx, name)
}

func (c *requestCounter) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	c.n.Add(1)
	return c.Store.List(ctx, prefix)
}

func (c *requestCounter) Delete(ctx context.Context, name string) error {
	c.n.Add(1)
	return c.Store.Delete(ctx, name)
}
