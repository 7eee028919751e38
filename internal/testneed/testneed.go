// Package testneed is the one policy for tests that need something from
// outside the repository: a peer environment (real JAX, real PJRT
// plugins), a versitygw binary, a data set.
//
// Outside CI a missing need skips the test with one line that names what
// is missing and the command that installs it, so `go test ./...` passes
// on a fresh clone. Under CI=true it fails the test instead: CI must never
// silently stop testing against JAX because an install broke.
//
// When XLACACHE_SKIP_LOG names a file, every missing need also appends one
// line "group<TAB>what" to it, so a wrapper script can print one summary
// line per group at the end of a run, visible without -v.
package testneed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/elfsym"
)

// Environment variables read by this package.
const (
	// EnvCI is set to "true" by CI systems (GitHub Actions, GitLab, .ci/run).
	EnvCI = "CI"
	// EnvSkipLog names a file that collects one line per missing need.
	EnvSkipLog = "XLACACHE_SKIP_LOG"
	// EnvPeersDir overrides where scripts/peers.sh keeps its venvs
	// (default: the user cache directory's xlacache-peers).
	EnvPeersDir = "XLACACHE_PEERS_DIR"
)

// Groups of needs, as they appear in the skip log.
const (
	GroupPeers = "peers"
)

// PeersCommand installs every peer environment.
const PeersCommand = "bash scripts/peers.sh"

// Missing ends the test because what, from group, is not available:
// t.Skip outside CI, t.Fatal under CI=true. howToGet is the command (or
// the one step) that provides it. It does not return.
func Missing(t testing.TB, group, what, howToGet string) {
	t.Helper()
	logSkip(t, group, what)
	msg := oneLine(fmt.Sprintf("needs %s (%s), not available; to install: %s", what, group, howToGet))
	if InCI() {
		t.Fatal(msg + " [CI=true: a missing need fails the run]")
		return // t.Fatal does not return; a TB that records it might
	}
	t.Skip(msg)
}

// InCI reports whether the tests run under CI, where nothing may be
// skipped for being absent.
func InCI() bool { return os.Getenv(EnvCI) == "true" }

// logSkip appends "group\twhat\n" to the skip log, if one is named. One
// write on an O_APPEND descriptor, so lines from parallel test binaries do
// not interleave. A log that cannot be written is reported but does not
// change the test's outcome.
func logSkip(t testing.TB, group, what string) {
	t.Helper()
	path := os.Getenv(EnvSkipLog)
	if path == "" {
		return
	}
	line := oneLine(group) + "\t" + oneLine(what) + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Logf("testneed: skip log: %v", err)
		return
	}
	if _, err := f.WriteString(line); err != nil {
		t.Logf("testneed: skip log %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Logf("testneed: skip log %s: %v", path, err)
	}
}

// oneLine keeps a log field on its line and in its column.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// PeersDir is where scripts/peers.sh keeps its venvs: XLACACHE_PEERS_DIR,
// else ${XDG_CACHE_HOME:-$HOME/.cache}/xlacache-peers.
func PeersDir() (string, error) {
	if d := os.Getenv(EnvPeersDir); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("peers directory: %w", err)
	}
	return filepath.Join(c, "xlacache-peers"), nil
}

// RepoRoot is the directory of the module's go.mod, found upwards from the
// working directory (a test runs in its package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// VenvName is the directory name scripts/peers.sh gives the venv of the
// list peers/<list>.txt whose content is content: the list's name and the
// first 12 hex digits of the content's SHA-256, so an edited list gets a
// fresh venv and an old venv is never used for new pins.
func VenvName(list string, content []byte) string {
	sum := sha256.Sum256(content)
	return list + "-" + hex.EncodeToString(sum[:])[:12]
}

// markerFile is written by scripts/peers.sh into a venv only after its
// install succeeded; a venv without it is incomplete.
const markerFile = ".xlacache-peers-ok"

// PeerEnvVar is the variable that points a test at the Python of list
// instead of the venv scripts/peers.sh made: XLACACHE_PEER_ and the list's
// name upper-cased, every other character an underscore
// (jax-0.12.0.1 -> XLACACHE_PEER_JAX_0_12_0_1). scripts/peers.sh writes the
// same names to current.env.
func PeerEnvVar(list string) string {
	return "XLACACHE_PEER_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, list)
}

// FindPeer returns the venv directory of peers/<list>.txt as installed by
// scripts/peers.sh, or the directory of the Python that PeerEnvVar(list)
// names (its bin/ parent), or an error saying what is missing.
func FindPeer(list string) (venv string, err error) {
	if py := os.Getenv(PeerEnvVar(list)); py != "" {
		if err := executable(py); err != nil {
			return "", fmt.Errorf("%s=%s: %w", PeerEnvVar(list), py, err)
		}
		return filepath.Dir(filepath.Dir(py)), nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	content, err := os.ReadFile(filepath.Join(root, "peers", list+".txt"))
	if err != nil {
		return "", fmt.Errorf("peer list: %w", err)
	}
	dir, err := PeersDir()
	if err != nil {
		return "", err
	}
	venv = filepath.Join(dir, VenvName(list, content))
	if _, err := os.Stat(filepath.Join(venv, markerFile)); err != nil {
		return "", fmt.Errorf("peer %s not installed for the current list (%s)", list, venv)
	}
	if err := executable(filepath.Join(venv, "bin", "python")); err != nil {
		return "", fmt.Errorf("peer %s: %w", list, err)
	}
	return venv, nil
}

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// PeerPython returns the Python interpreter of the peer environment
// peers/<list>.txt (for example "jax-0.12.0.1"), or ends the test through
// Missing, naming scripts/peers.sh.
func PeerPython(t testing.TB, list string) string {
	t.Helper()
	venv, err := FindPeer(list)
	if err != nil {
		t.Logf("testneed: %v", err)
		Missing(t, GroupPeers, "Python environment "+list+" ("+PeerEnvVar(list)+")", PeersCommand)
	}
	if py := os.Getenv(PeerEnvVar(list)); py != "" {
		return py
	}
	return filepath.Join(venv, "bin", "python")
}

// PluginsList is the peer list that installs the PJRT plugin wheels.
const PluginsList = "pjrt-plugins"

// PJRTPlugins returns the PJRT plugin libraries installed in the plugins
// peer environment, by the top-level package that ships each
// (xla_cpu_pjrt's lives in xla_plugins/xla_cpu_pjrt, so "xla_plugins/xla_cpu_pjrt"),
// or ends the test through Missing. A plugin is a shared object that
// exports GetPjrtApi, the PJRT C API's entry point.
func PJRTPlugins(t testing.TB) map[string]string {
	t.Helper()
	venv, err := FindPeer(PluginsList)
	if err == nil {
		var found map[string]string
		found, err = FindPJRTPlugins(venv)
		if err == nil && len(found) == 0 {
			err = fmt.Errorf("no library exporting GetPjrtApi in %s", venv)
		}
		if err == nil {
			return found
		}
	}
	t.Logf("testneed: %v", err)
	Missing(t, GroupPeers, "PJRT plugin wheels ("+PluginsList+")", PeersCommand+" "+PluginsList)
	return nil
}

// FindPJRTPlugins walks the site-packages of venv for shared objects that
// export GetPjrtApi, keyed by their directory relative to site-packages.
func FindPJRTPlugins(venv string) (map[string]string, error) {
	sites, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if err != nil || len(sites) == 0 {
		return nil, fmt.Errorf("no site-packages in %s", venv)
	}
	found := map[string]string{}
	for _, site := range sites {
		err := filepath.WalkDir(site, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".so") || !d.Type().IsRegular() {
				return nil
			}
			if !elfsym.DefinesFunc(path, "GetPjrtApi") {
				return nil
			}
			rel, err := filepath.Rel(site, filepath.Dir(path))
			if err != nil {
				return err
			}
			if prev, dup := found[rel]; dup {
				return fmt.Errorf("two PJRT plugins in %s: %s and %s", rel, prev, path)
			}
			found[rel] = path
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("looking for PJRT plugins: %w", err)
		}
	}
	return found, nil
}
