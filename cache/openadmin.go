package cache

import (
	"context"
	"log/slog"

	"github.com/xlacache/xlacache/config"
)

// OpenAdmin opens the cache of opts for an administrative command: never
// the shared tier (these commands act on the local directory), and as a
// writer only when write says the command modifies the directory.
func OpenAdmin(ctx context.Context, opts config.Options, write bool, logger *slog.Logger) (*Cache, error) {
	opts.SharedURL = ""
	if write {
		opts.Role = config.RoleWriter
	} else {
		opts.Role = config.RoleReader
	}
	return Open(ctx, opts, logger)
}
