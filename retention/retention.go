// Package retention keeps the shared tier's bucket bounded: it removes
// xlacache's entries from the store when they have not been used for a
// given age, or beyond a given total size, least recently used first. It
// is what `xlacache prune --shared` runs.
//
// What it covers: the objects of xlacache's entries, "executables/<key>"
// and "<backend>/<subcache>/<key>" (what writers publish on a compile and
// what `xlacache sync push` copies), and their usage markers,
// "used/<tier>/<key>". Nothing else in the bucket is touched: not XLA's
// raw subcache files the mirror publishes ("xla_gpu_per_fusion_autotune_cache_dir/...",
// "xla_gpu_kernel_cache_file.parts/..."), not leases or probe objects,
// not whatever else shares the prefix. Their use is not recorded per
// object, so an age rule on them would be a guess; a bucket lifecycle rule
// on their prefixes is the tool for those (docs/retention.md).
//
// When an object was last used: the later of its LastModified and its
// usage marker's. Writers refresh a marker when they hit the object,
// coarsely (at most once a day per object; cache/sharedstore.go); readers
// never write, so an object only readers use ages from its last writer's
// use.
//
// Removing is safe for concurrent readers: an S3 delete removes a whole
// object, so a reader gets either the whole object (verified by its
// checksum anyway) or ErrNotExist, which is a miss and a compile. Just
// before removing an object, Prune looks at it and its marker again, and
// keeps it if either changed since the listing or its last use is no
// longer past the age threshold.
package retention

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
	"github.com/xlacache/xlacache/internal/logonce"
)

// orphanMarkerAge is how old a usage marker without its object must be
// before Prune removes it: a writer may mark an object just before it is
// published, and a marker costs nothing but a list entry.
const orphanMarkerAge = 24 * time.Hour

// SizeGrace protects new entries from the size rule: an entry published
// or used within it never goes to make room. Hosts that waited for an
// entry another host was compiling (single-flight across hosts) fetch it
// right after it is published; removing it then would cost each of them
// a compile. (The age rule is not affected: an age below SizeGrace
// removes what is older than that age.)
const SizeGrace = time.Hour

// Options configures Prune. At least one of OlderThan and MaxSize must be
// set.
type Options struct {
	// OlderThan removes entries not used for longer than this (0: no age
	// rule).
	OlderThan time.Duration
	// MaxSize then removes entries, least recently used first, until the
	// entries' bytes are at most MaxSize (0: no size rule). Markers are
	// not counted: a few dozen bytes each.
	MaxSize int64
	// DryRun reports what would be removed without removing anything.
	DryRun bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the summary line and, once per kind, removal
	// failures; nil means slog.Default().
	Logger *slog.Logger
}

// Object is one entry object of the store.
type Object struct {
	// Name, Size, ModTime and ETag are as the listing reported them.
	Name    string
	Size    int64
	ModTime time.Time
	ETag    string
	// Marker is its usage marker's LastModified, zero without one.
	Marker time.Time
}

// LastUse is when the object was last used, as far as the store tells:
// the later of its LastModified and its marker's.
func (o Object) LastUse() time.Time {
	if o.Marker.After(o.ModTime) {
		return o.Marker
	}
	return o.ModTime
}

// Kept is an object Prune chose but left in place, and why.
type Kept struct {
	Name, Reason string
}

// Result reports what Prune did (or, in a dry run, would do).
type Result struct {
	// Objects and Bytes are the entries found.
	Objects int
	Bytes   int64
	// Removed are the entries removed, oldest use first.
	Removed      []string
	RemovedBytes int64
	// Kept were chosen but left: used or rewritten since the listing, or
	// their removal failed.
	Kept []Kept
	// Markers counts usage markers removed: those of removed entries and
	// orphans.
	Markers int
	// After is the entries' bytes left.
	After int64
	// Short reports that the size rule stopped at entries used within
	// SizeGrace, leaving After above MaxSize.
	Short bool
}

// Scan lists the store's entry objects with their markers' times, and the
// markers whose object is absent.
func Scan(ctx context.Context, store blob.Store) (objs []Object, orphans []blob.Info, err error) {
	all, err := store.List(ctx, "")
	if err != nil {
		return nil, nil, fmt.Errorf("listing the shared store: %w", err)
	}
	markers := map[string]blob.Info{}
	for _, in := range all {
		if obj, ok := layout.MarkedObject(in.Name); ok {
			markers[obj] = in
		}
	}
	for _, in := range all {
		if !layout.IsEntryObject(in.Name) {
			continue
		}
		o := Object{Name: in.Name, Size: in.Size, ModTime: in.ModTime, ETag: in.ETag}
		if m, ok := markers[in.Name]; ok {
			o.Marker = m.ModTime
			delete(markers, in.Name)
		}
		objs = append(objs, o)
	}
	for _, m := range markers {
		orphans = append(orphans, m)
	}
	sort.Slice(orphans, func(i, j int) bool { return orphans[i].Name < orphans[j].Name })
	return objs, orphans, nil
}

// Prune removes entry objects of store not used for o.OlderThan, then
// least recently used ones until the rest fit o.MaxSize (none used within
// SizeGrace: see Result.Short), and the usage
// markers of what it removes and orphaned ones. Objects used or rewritten
// since the listing are kept (a re-check of each, one Stat of the object
// and one of its marker, just before its removal). A failed removal is
// logged once per kind and reported in Kept; the error is for a store
// that cannot be listed.
func Prune(ctx context.Context, store blob.Store, o Options) (Result, error) {
	var res Result
	if o.OlderThan <= 0 && o.MaxSize <= 0 {
		return res, errors.New("retention: neither an age nor a size to prune to")
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logs := logonce.New(logger)
	objs, orphans, err := Scan(ctx, store)
	if err != nil {
		return res, err
	}
	t0 := now()
	var cutoff time.Time // zero: no age rule
	if o.OlderThan > 0 {
		cutoff = t0.Add(-o.OlderThan)
	}
	res.Objects = len(objs)
	for _, ob := range objs {
		res.Bytes += ob.Size
	}
	res.After = res.Bytes
	// Least recently used first; names break ties so that runs agree.
	sort.Slice(objs, func(i, j int) bool {
		a, b := objs[i].LastUse(), objs[j].LastUse()
		if !a.Equal(b) {
			return a.Before(b)
		}
		return objs[i].Name < objs[j].Name
	})
	for _, ob := range objs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		old := !cutoff.IsZero() && ob.LastUse().Before(cutoff)
		over := o.MaxSize > 0 && res.After > o.MaxSize
		if over && !old && t0.Sub(ob.LastUse()) < SizeGrace {
			// Sorted: every later object is as recent.
			over, res.Short = false, true
		}
		if !old && !over {
			break // sorted: no later object is older or needed for size
		}
		if reason := recheck(ctx, store, ob, cutoff, old); reason != "" {
			res.Kept = append(res.Kept, Kept{ob.Name, reason})
			continue
		}
		if !o.DryRun {
			if err := store.Delete(ctx, ob.Name); err != nil {
				logs.Warn(logonce.FailureKey(err), "xlacache: bucket retention could not remove a shared entry", "object", ob.Name, "err", err)
				res.Kept = append(res.Kept, Kept{ob.Name, err.Error()})
				continue
			}
		}
		res.Removed = append(res.Removed, ob.Name)
		res.RemovedBytes += ob.Size
		res.After -= ob.Size
		if !ob.Marker.IsZero() {
			if o.DryRun || deleteMarker(ctx, store, layout.UsedMarker(ob.Name), logs) {
				res.Markers++
			}
		}
	}
	for _, m := range orphans {
		if t0.Sub(m.ModTime) < orphanMarkerAge {
			continue
		}
		// The object may have been published since the listing: its
		// marker is then not an orphan.
		if obj := strings.TrimPrefix(m.Name, layout.UsedPrefix); !o.DryRun {
			if _, err := store.Stat(ctx, obj); !errors.Is(err, blob.ErrNotExist) {
				continue
			}
		}
		if o.DryRun || deleteMarker(ctx, store, m.Name, logs) {
			res.Markers++
		}
	}
	if !o.DryRun && len(res.Removed) > 0 {
		logger.Info("pruned the shared tier", "removed", len(res.Removed), "removed_bytes", res.RemovedBytes, "bytes", res.After, "kept", len(res.Kept))
	}
	return res, nil
}

// recheck looks at ob and its marker again just before ob's removal and
// says why it must stay, or "". old says ob was chosen by the age rule
// (cutoff): it stays unless its last use is still before the cutoff. An
// object chosen for size stays if it was used or rewritten since the
// listing: it is no longer the least recently used.
func recheck(ctx context.Context, store blob.Store, ob Object, cutoff time.Time, old bool) string {
	in, err := store.Stat(ctx, ob.Name)
	switch {
	case errors.Is(err, blob.ErrNotExist):
		return "" // gone already: removing it again is a no-op
	case err != nil:
		return "could not be checked: " + err.Error()
	case !in.ModTime.Equal(ob.ModTime) || (ob.ETag != "" && in.ETag != "" && in.ETag != ob.ETag):
		return "rewritten since the listing"
	}
	cur := ob
	cur.ModTime = in.ModTime
	cur.Marker = time.Time{}
	m, err := store.Stat(ctx, layout.UsedMarker(ob.Name))
	switch {
	case err == nil:
		cur.Marker = m.ModTime
	case !errors.Is(err, blob.ErrNotExist):
		return "usage marker could not be checked: " + err.Error()
	}
	if old && !cur.LastUse().Before(cutoff) {
		return "used since the listing (no longer past the age threshold)"
	}
	if cur.LastUse().After(ob.LastUse()) {
		return "used since the listing"
	}
	return ""
}

// deleteMarker removes a usage marker, reporting whether it is gone. A
// failure is logged once per kind: the marker is only a few bytes.
func deleteMarker(ctx context.Context, store blob.Store, name string, logs *logonce.Logger) bool {
	if err := store.Delete(ctx, name); err != nil {
		logs.Warn(logonce.FailureKey(err), "xlacache: bucket retention could not remove a usage marker", "object", name, "err", err)
		return false
	}
	return true
}
