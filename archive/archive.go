// Package archive exports a cache directory as one portable file (an
// archive) and imports such a file into a cache directory, so that a warm
// cache can be shipped (in a container image, to a host without the
// shared tier).
//
// An archive is a zstd-compressed tar stream. Its first member is a
// manifest (ManifestName, JSON) listing the SHA-256 of every XLA raw
// subcache file in the archive, HMAC-signed when a signing key is set; the
// other members are files at their paths relative to the cache directory:
// xlacache entries ("<tier>/<shard>/<key>"), XLA's autotune files and its
// kernel cache file, and JAX's executable entries ("<module>-<64 hex>-cache"
// at the top of the directory, where JAX keeps them). Entries carry their
// own checksum and signature; XLA's files and JAX's entries, which have
// none, are checked against the manifest.
//
// Import treats the archive as hostile: every member is checked before
// anything is written (a plain relative path at its place in the layout,
// a regular file, a bounded size, a verified entry or a raw file matching a
// trusted manifest), files are installed atomically, existing entries are
// never replaced, and the kernel cache file is merged rather than
// overwritten.
package archive

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/rawfiles"
)

// jaxArea marks a JAX executable entry in a layout.Class (Kind Foreign to
// the layout, which leaves JAX's files alone): the archive carries them as
// raw files, checked against the manifest, so that a directory JAX wrote
// ships warm for JAX too.
const jaxArea = "jax"

// isJAXEntry reports whether name (slash path relative to the directory)
// is a JAX executable entry: "<module>-<64 hex>-cache" at the top.
func isJAXEntry(name string) bool {
	key, ok := strings.CutSuffix(name, layout.JAXCacheSuffix)
	if !ok || strings.Contains(name, "/") {
		return false
	}
	_, _, ok = jaxcache.SplitKey(key)
	return ok
}

// ManifestName is the name of an archive's first member.
const ManifestName = ".xlacache-manifest.json"

// Options configure Export and Import.
type Options struct {
	// SigningKey, when set, is required of every entry exported or
	// imported (an entry not signed with it is left out or refused), signs
	// the manifest on export (keys that cannot sign, an Ed25519 reader's,
	// export an unsigned manifest: importers with keys then take its
	// entries, which verify alone, but not its raw files), and on import
	// accepts XLA's raw files only under a manifest signed with it.
	SigningKey *sign.Keys
	// DirMode and FileMode are the modes of the directories and files
	// Import creates; zero means 0700 and 0600.
	DirMode, FileMode fs.FileMode
	// MaxMemberSize and MaxImportSize bound, on Import, one member's size
	// and the sum of the members' sizes; zero means DefaultMaxMemberSize
	// and DefaultMaxImportSize.
	MaxMemberSize, MaxImportSize int64
}

// OptionsFor returns the archive options of a cache configured with
// opts: its signing key and its directory and file modes.
func OptionsFor(opts config.Options) Options {
	return Options{SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode()}
}

func (o Options) modes() (dir, file fs.FileMode) {
	dir, file = o.DirMode, o.FileMode
	if dir == 0 {
		dir = 0o700
	}
	if file == 0 {
		file = 0o600
	}
	return dir, file
}

// manifest lists XLA's raw files (which, unlike entries, carry no checksum
// of their own) with their SHA-256, and is signed when a key is set.
type manifest struct {
	Version int               `json:"version"`
	Created time.Time         `json:"created"`
	Raw     map[string]string `json:"raw"`
	// MAC is the signature over the manifest with MAC empty, as text
	// (sign.Keys.SignText: an HMAC-SHA256 in hex, as it always was, or
	// "ed25519:" and the hex of an Ed25519 signature).
	MAC string `json:"mac,omitempty"`
}

// macInvalid marks a manifest whose signature is missing or wrong under
// the importer's key: its raw-file hashes are then not trusted.
const macInvalid = "invalid"

// signedBytes is what the manifest's signature covers.
func (m manifest) signedBytes() []byte {
	c := m
	c.MAC = ""
	b, _ := json.Marshal(c)
	return append([]byte("xlacache-manifest-v1\x00"), b...)
}

// sign returns the manifest's signature under keys.
func (m manifest) sign(keys *sign.Keys) (string, error) {
	return keys.SignText(m.signedBytes())
}

// verify checks the manifest's signature under keys.
func (m manifest) verify(keys *sign.Keys) error {
	if m.MAC == "" {
		return errors.New("unsigned manifest")
	}
	return keys.VerifyText(m.signedBytes(), m.MAC)
}

// classify decides what the file at name (slash path relative to the cache
// directory) is, and refuses anything but an entry at its place in a tier
// and XLA's autotune and kernel cache files.
func classify(name string) (layout.Class, error) {
	if err := layout.ValidRel(name); err != nil {
		return layout.Class{}, err
	}
	if isJAXEntry(name) {
		return layout.Class{Kind: layout.Foreign, Area: jaxArea, Key: strings.TrimSuffix(name, layout.JAXCacheSuffix)}, nil
	}
	c := layout.Classify(name)
	switch c.Kind {
	case layout.XLAKernel:
		return c, nil
	case layout.XLAAutotune:
		if rawfiles.ValidAutotuneName(strings.TrimPrefix(name, layout.XLAAutotuneDir+"/")) {
			return c, nil
		}
	case layout.Entry:
		if _, _, err := cache.ParseKey(c.Key); err != nil {
			return layout.Class{}, err
		}
		return c, nil
	}
	if strings.HasPrefix(name, layout.XLAAutotuneDir+"/") {
		return layout.Class{}, fmt.Errorf("%q is not an XLA autotune file name", name)
	}
	return layout.Class{}, fmt.Errorf("%q is not an entry at its place in a cache tier (<tier>/<shard>/<key>)", name)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func writeMember(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	hdr := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
