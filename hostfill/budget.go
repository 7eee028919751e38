package hostfill

import (
	"context"
	"sync"
)

// budget is the memory one fill may hold at once, shared by all of its
// concurrent requests: a byte count taken before bytes are read and given
// back once they are written (or dropped).
type budget struct {
	ctx  context.Context
	stop func() bool // ends the wake-up on ctx's end

	mu         sync.Mutex
	cond       *sync.Cond
	total, use int64
	peak       int64 // the most held at once, for tests and stats
}

// newBudget returns a budget of total bytes; acquire fails once ctx is
// done.
func newBudget(ctx context.Context, total int64) *budget {
	b := &budget{ctx: ctx, total: max(total, 1)}
	b.cond = sync.NewCond(&b.mu)
	b.stop = context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	return b
}

// close releases the budget's hold on its context.
func (b *budget) close() { b.stop() }

// clamp is what n costs of the budget: a request larger than the whole
// budget takes all of it, so that it runs alone rather than never.
func (b *budget) clamp(n int64) int64 { return min(max(n, 0), b.total) }

// acquire waits until n bytes (clamped) are free and takes them.
func (b *budget) acquire(n int64) error {
	n = b.clamp(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.use+n > b.total {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	b.use += n
	b.peak = max(b.peak, b.use)
	return nil
}

// release gives back what acquire(n) took.
func (b *budget) release(n int64) {
	n = b.clamp(n)
	b.mu.Lock()
	b.use -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}
