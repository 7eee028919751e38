package retention_test

import (
	"os"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/layout"
)

// removeLocal deletes key's local executables entry in dir.
func removeLocal(t *testing.T, dir string, k cache.Key) {
	t.Helper()
	if err := os.Remove(layout.Dir(dir).Entry(cache.ExecutablesTier, k.String())); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
