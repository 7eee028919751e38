package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestExportImportJAXEntries: JAX's executable entries travel (a directory
// JAX wrote ships warm for JAX), one JAX is writing in place (not whole)
// stays behind, and a member altered after export is refused.
func TestExportImportJAXEntries(t *testing.T) {
	ctx := context.Background()
	src, dst := t.TempDir(), t.TempDir()
	key := "jit_step-" + strings.Repeat("ab", 32)
	data, err := jaxcache.Encode(jaxcache.CodecZlib, 3*time.Second, []byte("an executable"))
	if err != nil {
		t.Fatal(err)
	}
	if err := jaxcache.WriteEntry(src, key, data, time.Now(), 0o600); err != nil {
		t.Fatal(err)
	}
	partial := "jit_half-" + strings.Repeat("cd", 32) + "-cache"
	if err := os.WriteFile(filepath.Join(src, partial), data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := Export(ctx, src, &buf, Options{})
	if err != nil || st.Files != 1 || st.Skipped != 1 {
		t.Fatalf("export: %+v %v", st, err)
	}
	ist, err := Import(ctx, bytes.NewReader(buf.Bytes()), dst, Options{})
	if err != nil || ist.Files != 1 || len(ist.Refused) != 0 {
		t.Fatalf("import: %+v %v", ist, err)
	}
	got, err := os.ReadFile(filepath.Join(dst, key+"-cache"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("JAX entry not imported intact: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, partial)); err == nil {
		t.Error("an entry that does not decode whole travelled")
	}

	// The same archive with the entry's bytes changed: refused.
	dst2 := t.TempDir()
	var tampered bytes.Buffer
	rewriteMember(t, bytes.NewReader(buf.Bytes()), &tampered, key+"-cache", func(b []byte) []byte { b[len(b)-1] ^= 1; return b })
	ist, err = Import(ctx, &tampered, dst2, Options{})
	if err != nil || ist.Files != 0 || len(ist.Refused) != 1 {
		t.Fatalf("tampered import: %+v %v", ist, err)
	}
}

// rewriteMember copies the archive in to out with member name's data
// passed through f.
func rewriteMember(t *testing.T, in io.Reader, out io.Writer, name string, f func([]byte) []byte) {
	t.Helper()
	zr, err := zstd.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	zw, err := zstd.NewWriter(out)
	if err != nil {
		t.Fatal(err)
	}
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == name {
			b = f(b)
		}
		hdr.Size = int64(len(b))
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
