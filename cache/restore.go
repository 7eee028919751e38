package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
)

// RestoredEntry is a quarantined entry moved back into its tier.
type RestoredEntry struct {
	// From is the quarantined file, To the entry path it was moved to.
	From string `json:"from"`
	To   string `json:"to"`
	Tier string `json:"tier"`
	Key  string `json:"key"`
}

// KeptEntry is a quarantined file Restore left where it is, and why.
type KeptEntry struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// RestoreResult reports what Restore did.
type RestoreResult struct {
	// Checked counts the quarantined files examined.
	Checked  int             `json:"checked"`
	Restored []RestoredEntry `json:"restored"`
	Kept     []KeptEntry     `json:"kept"`
}

// Restore moves quarantined entries that verify (checksum, decompression,
// and the signature with this cache's key) back to where they belong in
// their tier, undoing a repair made with a wrong signing key, or an
// earlier build's stricter checks. A file that still fails verification
// stays in the quarantine, and so does one whose entry path is taken
// already (a fresh compile filled it: first writer wins). An entry
// quarantined because its backend could not load it verifies too, and is
// moved back: the next hit on it quarantines it again.
//
// The quarantined file's name says its tier (layout.QuarantineName); the
// key comes from the verified header. It needs a writer cache.
func (c *Cache) Restore(ctx context.Context) (RestoreResult, error) {
	var res RestoreResult
	if c == nil || c.dir == "" || c.root == nil {
		return res, errors.New("restore: no usable cache directory")
	}
	if !c.writer {
		return res, fmt.Errorf("restore %s: this process is a reader (role %s, index %d)", c.dir, c.opts.Role, c.opts.ProcessIndex)
	}
	ents, err := fs.ReadDir(c.root.FS(), layout.QuarantineDir)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil // nothing was ever quarantined
	}
	if err != nil {
		return res, fmt.Errorf("restore: listing %s: %w", layout.Dir(c.dir).Quarantine(), err)
	}
	for _, d := range ents {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		name := d.Name()
		if !d.Type().IsRegular() || layout.IsTemp(name) {
			continue
		}
		res.Checked++
		rel := layout.QuarantineRel(name)
		r, why := c.restoreOne(rel, name)
		if why != "" {
			res.Kept = append(res.Kept, KeptEntry{Path: layout.Dir(c.dir).Join(rel), Reason: why})
			continue
		}
		res.Restored = append(res.Restored, r)
	}
	if len(res.Restored) > 0 {
		c.logger.Info("restored quarantined cache entries", "dir", c.dir, "restored", len(res.Restored), "kept", len(res.Kept))
	}
	return res, nil
}

// restoreOne moves the quarantined file rel (base name name) back to its
// tier, or says why not.
func (c *Cache) restoreOne(rel, name string) (RestoredEntry, string) {
	data, err := readEntryIn(c.root, rel)
	if err != nil {
		return RestoredEntry{}, err.Error()
	}
	e, err := entry.Decode(data, c.signingKey)
	if err != nil {
		return RestoredEntry{}, "does not verify: " + err.Error()
	}
	if _, _, err := ParseKey(e.Key); err != nil {
		return RestoredEntry{}, fmt.Sprintf("holds an invalid key: %v", err)
	}
	tier, ok := c.quarantinedTier(name, e.Key)
	if !ok {
		return RestoredEntry{}, fmt.Sprintf("its name does not say which tier key %s belongs to", e.Key)
	}
	dst := layout.EntryRel(tier, e.Key)
	if err := atomicfile.MkdirAllIn(c.root, path.Dir(dst), c.opts.EffectiveDirMode()); err != nil {
		return RestoredEntry{}, fmt.Sprintf("creating %s: %v", path.Dir(dst), err)
	}
	// A link, not a rename: it fails when an entry is there already,
	// which stays (first writer wins).
	if err := c.root.Link(rel, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return RestoredEntry{}, "an entry for its key is in the tier already"
		}
		return RestoredEntry{}, fmt.Sprintf("moving it back: %v", err)
	}
	if err := c.root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Debug("restore: removing the quarantined copy", "path", rel, "err", err)
	}
	return RestoredEntry{From: layout.Dir(c.dir).Join(rel), To: layout.Dir(c.dir).Join(dst), Tier: tier, Key: e.Key}, ""
}

// quarantinedTier recovers the tier of a file quarantined under name
// (layout.QuarantineName: the tier with "/" spelled "_", "_", the key,
// ".", a unique suffix) holding key. Since a tier name may itself hold
// "_", every reading is tried: the one valid tier name is taken, or of
// several the one tier that exists in the directory.
func (c *Cache) quarantinedTier(name, key string) (string, bool) {
	i := strings.LastIndex(name, "_"+key+".")
	if i <= 0 {
		return "", false
	}
	prefix := name[:i]
	cands := []string{prefix}
	for j := range len(prefix) {
		if prefix[j] == '_' {
			cands = append(cands, prefix[:j]+"/"+prefix[j+1:])
		}
	}
	var valid, present []string
	for _, t := range cands {
		if ValidTierName(t) != nil {
			continue
		}
		valid = append(valid, t)
		if st, err := c.root.Lstat(t); err == nil && st.IsDir() {
			present = append(present, t)
		}
	}
	switch {
	case len(valid) == 1:
		return valid[0], true
	case len(present) == 1:
		return present[0], true
	}
	return "", false
}
