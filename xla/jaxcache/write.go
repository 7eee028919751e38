package jaxcache

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/internal/atomicfile"
)

// Encode builds an entry's bytes exactly as JAX's compilation_cache.py
// does: the compile time as 4 big-endian bytes of whole seconds, then the
// executable, the whole compressed with c. It is the inverse of Decode,
// for tools and tests that must produce entries JAX can read.
func Encode(c Codec, compileTime time.Duration, exe []byte) ([]byte, error) {
	if len(exe) == 0 {
		return nil, errors.New("encode JAX entry: empty executable")
	}
	secs := compileTime / time.Second
	if secs < 0 || secs > math.MaxUint32 {
		return nil, fmt.Errorf("encode JAX entry: compile time %v out of range", compileTime)
	}
	raw := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(exe)), uint32(secs))
	raw = append(raw, exe...)
	var b bytes.Buffer
	switch c {
	case CodecZstd:
		w, err := zstd.NewWriter(&b, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("encode JAX entry: %w", err)
		}
		w.Write(raw) // a bytes.Buffer does not fail; Close reports encoder errors
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("encode JAX entry: %w", err)
		}
	case CodecZlib:
		w := zlib.NewWriter(&b)
		w.Write(raw)
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("encode JAX entry: %w", err)
		}
	default:
		return nil, fmt.Errorf("encode JAX entry: codec %q: want zstd or zlib", c)
	}
	return b.Bytes(), nil
}

// WriteEntry stores data (from Encode) as key's entry in dir the way JAX's
// LRUCache.put does: "<key>-cache", then "<key>-atime" holding lastUse.
// Both files get mode (0 means 0600) and lastUse as their modification
// time. The key must be a JAX key ("<module>-<64 hex>") so that nothing is
// written outside dir.
//
// JAX itself writes the files in place; each is replaced atomically here
// (atomicfile.Replace), so a JAX process reading concurrently sees the old
// file or the new one, never a torn entry.
func WriteEntry(dir, key string, data []byte, lastUse time.Time, mode os.FileMode) error {
	if _, _, ok := SplitKey(key); !ok || filepath.Base(key) != key {
		return fmt.Errorf("write JAX entry: %q is not a JAX cache key", key)
	}
	if mode == 0 {
		mode = 0o600
	}
	files := []struct {
		name string
		data []byte
	}{
		{key + CacheSuffix, data},
		{key + AtimeSuffix, binary.LittleEndian.AppendUint64(nil, uint64(lastUse.UnixNano()))},
	}
	// Confined to dir: a symbolic link planted at an entry's name is
	// refused, never written through.
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("write JAX entry: %w", err)
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return fmt.Errorf("write JAX entry: %w", err)
	}
	defer root.Close()
	for _, f := range files {
		if err := atomicfile.Replace(f.name, f.data, atomicfile.Options{Perm: mode, Root: root}); err != nil {
			return fmt.Errorf("write JAX entry: %w", err)
		}
		if err := root.Chtimes(f.name, lastUse, lastUse); err != nil {
			return fmt.Errorf("write JAX entry: %w", err)
		}
	}
	return nil
}
