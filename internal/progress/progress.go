// Package progress draws the CLI's progress bars on a terminal, and
// nothing anywhere else: `run`'s bar per compile stage and `warm`'s count
// of programs. Output that is not a terminal gets no bar at all, so logs
// and pipes see only the report.
package progress

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Stages shows one bar per stage of a compile (autotune, compile) while a
// stage runs, when its writer is a terminal.
type Stages struct {
	w     io.Writer
	tty   bool
	bar   *progressbar.ProgressBar
	stage string
}

// NewStages returns stage bars drawn on w.
func NewStages(w io.Writer) *Stages {
	return &Stages{w: w, tty: IsTerminal(w)}
}

// Update reports done of total steps of stage (the signature of
// cpu.Backend.Progress); a new stage finishes the previous bar.
func (p *Stages) Update(stage string, done, total int) {
	if !p.tty || total <= 0 {
		return
	}
	if p.bar == nil || p.stage != stage {
		if p.bar != nil {
			p.bar.Finish()
		}
		p.stage = stage
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(stage),
			progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
		p.bar.RenderBlank()
	}
	p.bar.Set(done)
}

// Finish clears the bar of the last stage.
func (p *Stages) Finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// Counter counts finished items (warm's programs) on a bar that redraws
// every second, so that its elapsed time shows it is alive while one item
// takes minutes. It draws nothing when show is false or total is 0.
type Counter struct {
	mu   sync.Mutex
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// NewCounter returns a counter of total items described by desc, drawn on
// w when show is true.
func NewCounter(w io.Writer, desc string, total int, show bool) *Counter {
	c := &Counter{}
	if total == 0 || !show {
		return c
	}
	c.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish(), progressbar.OptionSetElapsedTime(true))
	c.bar.RenderBlank()
	c.stop = make(chan struct{})
	c.wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.mu.Lock()
				c.bar.Add(0)
				c.mu.Unlock()
			}
		}
	})
	return c
}

// Done counts one finished item; it is safe for concurrent use.
func (c *Counter) Done() {
	if c.bar == nil {
		return
	}
	c.mu.Lock()
	c.bar.Add(1)
	c.mu.Unlock()
}

// Finish stops the redraws and clears the bar.
func (c *Counter) Finish() {
	if c.bar == nil {
		return
	}
	close(c.stop)
	c.wg.Wait()
	c.bar.Finish()
}
