package hostfill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/layout"
)

// orphanAge is how old half a pack (a pack without its index, or an index
// without its pack) must be before PrunePacks removes it: a publish
// writes the pack, then the index, and a fill ignores an index without a
// pack, so only a crashed publish (or an earlier prune stopped midway)
// leaves one for long.
const orphanAge = 24 * time.Hour

// PruneOptions configure PrunePacks.
type PruneOptions struct {
	// OlderThan removes packs published longer ago than this; it must be
	// positive.
	OlderThan time.Duration
	// DryRun reports what would be removed without removing anything.
	DryRun bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives one line per kind of removal failure; nil means
	// slog.Default().
	Logger *slog.Logger
}

// PruneKept is a pack PrunePacks chose but left, and why.
type PruneKept struct {
	Name, Reason string
}

// PruneResult says what PrunePacks did (or, in a dry run, would do).
type PruneResult struct {
	// Packs and Bytes are the packs found (indexes not counted).
	Packs int
	Bytes int64
	// Removed are the pack objects removed with their indexes, oldest
	// first; RemovedBytes their size.
	Removed      []string
	RemovedBytes int64
	// Orphans counts halves of packs removed (see orphanAge).
	Orphans int
	// Kept were chosen but left: rewritten since the listing, or their
	// removal failed.
	Kept []PruneKept
}

// PrunePacks removes from the store the packs (with their indexes)
// published longer ago than o.OlderThan, and halves of packs a crashed
// publish left (after orphanAge).
//
// A pack's use is not recorded (fills only read), so the age is from its
// publication: the rule refreshes rather than forgets. A job's writer
// learns at its start which files the store's packs hold and publishes
// the rest of its directory, so files it still has come back in a new
// pack on its next run; a host that fills in between lacks them and
// compiles (or autotunes) again, which costs time, never a wrong result.
//
// Safe for concurrent fills: the index goes first, so a fill that lists
// afterwards no longer wants the pack; a fill that listed before and then
// finds the pack gone treats its files as missing from the store (another
// pack's copy is tried, else they are not installed). Every removal is
// preceded by a fresh look at the pack: one rewritten since the listing
// or no longer past the age is kept.
func PrunePacks(ctx context.Context, store blob.Store, o PruneOptions) (PruneResult, error) {
	var res PruneResult
	if o.OlderThan <= 0 {
		return res, errors.New("hostfill: PrunePacks needs a positive age")
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	objs, err := store.List(ctx, Prefix)
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", Prefix, err)
	}
	type pair struct {
		pack, index *blob.Info
	}
	byID := map[string]*pair{}
	for i := range objs {
		id, isIndex, ok := layout.ParsePackObject(objs[i].Name)
		if !ok {
			continue
		}
		isPack := !isIndex
		p := byID[id]
		if p == nil {
			p = &pair{}
			byID[id] = p
		}
		if isPack {
			p.pack = &objs[i]
			res.Packs++
			res.Bytes += objs[i].Size
		} else {
			p.index = &objs[i]
		}
	}
	start := now()
	old := func(t time.Time, age time.Duration) bool { return start.Sub(t) > age }
	type victim struct {
		id   string
		pack blob.Info
		idx  *blob.Info
	}
	var victims []victim
	var orphans []blob.Info
	for id, p := range byID {
		switch {
		case p.pack == nil:
			if old(p.index.ModTime, orphanAge) {
				orphans = append(orphans, *p.index)
			}
		case p.index == nil:
			if old(p.pack.ModTime, max(orphanAge, o.OlderThan)) {
				orphans = append(orphans, *p.pack)
			}
		case old(p.pack.ModTime, o.OlderThan):
			victims = append(victims, victim{id, *p.pack, p.index})
		}
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].pack.ModTime.Before(victims[j].pack.ModTime) })
	loggedFail := false
	failed := func(name string, err error) {
		res.Kept = append(res.Kept, PruneKept{name, "removal failed: " + err.Error()})
		if !loggedFail {
			loggedFail = true
			log.Warn("xlacache: removing a pack from the shared tier failed; the next prune retries it", "object", name, "err", err)
		}
	}
	// recheck looks at obj again just before it goes.
	recheck := func(obj blob.Info, age time.Duration) (string, bool) {
		cur, err := store.Stat(ctx, obj.Name)
		switch {
		case errors.Is(err, blob.ErrNotExist):
			return "already gone", false
		case err != nil:
			return "could not look at it again: " + err.Error(), false
		case cur.ETag != obj.ETag || !cur.ModTime.Equal(obj.ModTime):
			return "rewritten since the listing", false
		case !old(cur.ModTime, age):
			return "no longer past the age", false
		}
		return "", true
	}
	for _, v := range victims {
		if ctx.Err() != nil {
			res.Kept = append(res.Kept, PruneKept{v.pack.Name, "stopped: " + ctx.Err().Error()})
			continue
		}
		if why, ok := recheck(v.pack, o.OlderThan); !ok {
			if why != "already gone" {
				res.Kept = append(res.Kept, PruneKept{v.pack.Name, why})
			}
			continue
		}
		if !o.DryRun {
			// The index first: fills that list from now on do not want
			// the pack.
			if err := store.Delete(ctx, v.idx.Name); err != nil && !errors.Is(err, blob.ErrNotExist) {
				failed(v.pack.Name, err)
				continue
			}
			if err := store.Delete(ctx, v.pack.Name); err != nil && !errors.Is(err, blob.ErrNotExist) {
				// An index-less pack: a fill ignores it; the next prune
				// removes it as an orphan.
				failed(v.pack.Name, err)
				continue
			}
		}
		res.Removed = append(res.Removed, v.pack.Name)
		res.RemovedBytes += v.pack.Size
	}
	for _, obj := range orphans {
		age := orphanAge
		if strings.HasSuffix(obj.Name, packSuffix) {
			age = max(orphanAge, o.OlderThan)
		}
		if _, ok := recheck(obj, age); !ok {
			continue
		}
		if !o.DryRun {
			if err := store.Delete(ctx, obj.Name); err != nil && !errors.Is(err, blob.ErrNotExist) {
				failed(obj.Name, err)
				continue
			}
		}
		res.Orphans++
	}
	return res, nil
}
