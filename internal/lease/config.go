package lease

import (
	"log/slog"
	"os"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
)

// OptionsFor returns the Options of the manager that coordinates the
// processes sharing the cache directory opts.Dir: wait bound, role, file
// modes and lease timing all come from the cache's configuration.
func OptionsFor(opts config.Options, logger *slog.Logger) Options {
	lo := Options{
		Dir:        opts.Dir,
		Wait:       opts.WaitTimeout,
		Stale:      opts.LeaseStale,
		NoPIDCheck: opts.LeaseNoPIDCheck,
		NoClaim:    !opts.Writer(),
		DirMode:    opts.EffectiveDirMode(),
		FileMode:   opts.EffectiveFileMode(),
		Logger:     logger,
		WriterPresent: func() bool {
			// A writer's cache.Open creates the state directory first thing.
			_, err := os.Stat(layout.Dir(opts.Dir).State())
			return err == nil
		},
	}
	if opts.WaitTimeout <= 0 {
		// config treats 0 as "do not wait"; Options treats 0 as its default.
		lo.Wait = -1
	}
	return lo
}
