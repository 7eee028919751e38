// Package buildinfo describes the running binary from what the Go
// toolchain recorded in it (runtime/debug.ReadBuildInfo): the module's
// version, the VCS revision, time and modified flag, the Go version and the
// build settings. `xlacache version` prints it.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

// Info is what the toolchain recorded about a binary.
type Info struct {
	// Path and Version are the main module's path and version: a tag or
	// pseudo-version after `go install module@version`, "(devel)" for a
	// build from a clone.
	Path    string `json:"path"`
	Version string `json:"version"`
	// Revision, Time and Modified are the VCS commit a build from a clone
	// was made from, its time, and whether the tree had changes.
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
	// Settings are the other build settings (GOOS, GOARCH, CGO_ENABLED,
	// -tags, ...), by name.
	Settings map[string]string `json:"settings"`
}

// Read returns the running binary's Info; ok is false when it carries none
// (a binary built without module support).
func Read() (Info, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{}, false
	}
	return FromBuildInfo(bi), true
}

// FromBuildInfo converts what debug.ReadBuildInfo returns.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Path: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion, Settings: map[string]string{}}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "vcs":
		default:
			in.Settings[s.Key] = s.Value
		}
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	return in
}

// Short is the one line `xlacache --version` prints: version, revision
// (with "+modified" for a changed tree) and Go version.
func (in Info) Short() string {
	s := in.Version
	if in.Revision != "" {
		rev := in.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " " + rev
		if in.Modified {
			s += "+modified"
		}
		if in.Time != "" {
			s += " " + in.Time
		}
	}
	return s + " " + in.GoVersion
}

// String is the full description, one "name value" line each.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "module       %s %s\n", in.Path, in.Version)
	if in.Revision != "" {
		fmt.Fprintf(&b, "vcs.revision %s\nvcs.time     %s\nvcs.modified %t\n", in.Revision, in.Time, in.Modified)
	}
	fmt.Fprintf(&b, "go           %s\n", in.GoVersion)
	keys := make([]string, 0, len(in.Settings))
	for k := range in.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "build        %s=%s\n", k, in.Settings[k])
	}
	return b.String()
}
