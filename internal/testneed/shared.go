package testneed

import (
	"os"
	"path/filepath"
	"testing"
)

// Groups of needs besides the peers.
const (
	// GroupData is a data set read in place from ../shared beside the
	// repository (the StableHLO conformance programs, JAX's fixtures).
	GroupData = "data"
	// GroupServers is a server the tests start on loopback (versitygw).
	GroupServers = "servers"
)

// SharedDataHelp says where the shared data sets come from, for the line
// a test prints when one is missing.
const SharedDataHelp = "put the project's shared/ folder (conformance/: StableHLO programs from openxla/stablehlo's stablehlo/testdata; fixtures/: directories written by JAX's own cache code) beside the repository, as ../shared"

// SharedData returns the path of rel (slash-separated, e.g.
// "conformance/stablehlo-testdata") under the shared/ folder beside the
// repository, or under the directory env names when it is set. When it
// is absent the test ends through Missing: skipped outside CI, failed
// under CI=true.
func SharedData(t testing.TB, env, rel string) string {
	t.Helper()
	if env != "" {
		if d := os.Getenv(env); d != "" {
			if _, err := os.Stat(d); err != nil {
				Missing(t, GroupData, "shared/"+rel+" ($"+env+"="+d+")", "set $"+env+" to an existing directory")
			}
			return d
		}
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(filepath.Dir(root), "shared", filepath.FromSlash(rel))
	if _, err := os.Stat(d); err != nil {
		how := SharedDataHelp
		if env != "" {
			how += ", or set $" + env
		}
		Missing(t, GroupData, "shared/"+rel, how)
	}
	return d
}
