package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/xlacache/xlacache"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}, {Key: "GOARCH", Value: "amd64"}, {Key: "CGO_ENABLED", Value: "1"}}}
	in := FromBuildInfo(bi)
	if in.Version != "(devel)" || in.Revision != "0123456789abcdef0123" || !in.Modified || in.Settings["GOARCH"] != "amd64" || in.Settings["vcs"] != "" {
		t.Fatalf("%+v", in)
	}
	if got, want := in.Short(), "(devel) 0123456789ab+modified 2026-01-02T03:04:05Z go1.26.0"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	for _, want := range []string{"module       github.com/xlacache/xlacache (devel)", "vcs.modified true", "go           go1.26.0", "build        CGO_ENABLED=1\nbuild        GOARCH=amd64"} {
		if !strings.Contains(in.String(), want) {
			t.Errorf("String lacks %q:\n%s", want, in.String())
		}
	}
}
