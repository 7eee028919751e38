package jaxcache

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestReports(t *testing.T) {
	dir, _ := fixture(t)
	ctx := context.Background()
	d, err := Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteStats(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"5 entries", AutotuneDirName, KernelFileName, "3 files", "1 in progress", "orphaned atime files", "2 other names"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stats lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	ls, _ := List(ctx, d)
	if err := WriteList(&b, ls); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != 6 || !strings.Contains(b.String(), "unreadable") || !strings.Contains(b.String(), "(mtime)") {
		t.Errorf("ls:\n%s", b.String())
	}
	b.Reset()
	r, _ := Verify(ctx, d, VerifyOptions{})
	bad, err := WriteVerify(&b, d, r)
	if err != nil || bad != 1 || !strings.Contains(b.String(), "BAD jit_h-") {
		t.Errorf("verify bad=%d err=%v:\n%s", bad, err, b.String())
	}
	b.Reset()
	pr, err := Prune(ctx, dir, PruneOptions{MaxSize: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePrune(&b, dir, pr, true); err != nil || !strings.Contains(b.String(), "would remove jit_") {
		t.Errorf("prune:\n%s", b.String())
	}
	if got := bytesText(1536); got != "1.5 KiB" {
		t.Errorf("bytesText = %q", got)
	}
}
