package hostfill

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/xla/rawfiles"
)

// PublishStats says what publishes did.
type PublishStats struct {
	// Files and Bytes count files published (in Packs packs).
	Files, Packs int
	Bytes        int64
	// Incomplete counts files skipped because they were not whole (a JAX
	// entry being written) or not of their kind.
	Incomplete int
	// Kernels is what the kernel cache push did.
	Kernels rawfiles.MirrorStats
	// Examined counts the files scans looked at: a publish after file
	// events looks at what changed, not the whole directory.
	Examined int
}

// Publisher publishes a directory's new complete files to the store in
// packs, first writer wins. It remembers what it published and what the
// store already had, so repeated publishes send only new files. Safe for
// concurrent use; publishes are serialized.
type Publisher struct {
	store blob.Store
	o     Options

	mu      sync.Mutex
	done    map[string]bool    // published or on the store
	skipped map[string]fileSig // incomplete at the last look, by size and mtime
	stats   PublishStats
	mirror  *rawfiles.Mirror

	// pending are sealed files not yet sent: while the job runs, files
	// are sent in packs of up to PackFiles/PackBytes, or once the oldest
	// has waited the watcher's batch delay, not one pack per file.
	pending      []Member
	pendingNames map[string]bool
	pendingBytes int64
	pendingSince time.Time
}

type fileSig struct {
	size int64
	mod  time.Time
}

// newPublisher returns a Publisher of o.Root's files to store; remote is
// what the store already holds (FillStats.Remote), or nil.
func newPublisher(store blob.Store, o Options, remote map[string]bool) *Publisher {
	p := &Publisher{store: store, o: o, done: map[string]bool{}, skipped: map[string]fileSig{}, pendingNames: map[string]bool{}}
	for n := range remote {
		p.done[n] = true
	}
	if o.Kernels {
		p.mirror = rawfiles.NewMirror(store, rawfiles.MirrorOptions{Root: o.Root, Kernels: true, SigningKey: o.SigningKey,
			DirMode: o.DirMode, FileMode: o.FileMode, MaxObjectSize: o.MaxObjectSize})
	}
	return p
}

// PublisherAfterFill returns the Publisher of o.Root's files to store for
// a host whose fill ended as fr says: it skips what the store already
// holds, the names the fill learned or, when another process of the host
// ran the fill, the names in the store's indexes (read from the copies
// that fill kept, else from the store, within the fill's bound for wait).
// A failure to list the store is returned beside a Publisher that knows
// what could be read: it may then publish files the store already has,
// which costs requests and space, never a wrong result.
func PublisherAfterFill(ctx context.Context, store blob.Store, o Options, fr FillResult, wait time.Duration) (*Publisher, error) {
	remote := fr.Stats.Remote
	var err error
	if !fr.Filled {
		lctx, cancel := context.WithTimeout(ctx, fillBound(wait))
		remote, err = remoteNames(lctx, store, o)
		cancel()
	}
	return newPublisher(store, o, remote), err
}

// Stats returns the totals so far.
func (p *Publisher) Stats() PublishStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Publish scans the directory and publishes every complete file not yet
// on the store, with any held back by the watcher. With kernels set (the
// final publish, once the command has exited) it also publishes the
// kernel cache file, which XLA may rewrite in place while it runs.
func (p *Publisher) Publish(ctx context.Context, kernels bool) error {
	files, err := scanLocal(ctx, p.o.Root)
	if err != nil {
		return fmt.Errorf("scanning the cache directory: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	err = errors.Join(p.collectLocked(ctx, files), p.flushLocked(ctx))
	if kernels && p.mirror != nil {
		ks, kerr := p.mirror.Push(ctx)
		p.stats.Kernels.Pushed += ks.Pushed
		p.stats.Kernels.Bytes += ks.Bytes
		err = errors.Join(err, kerr)
	}
	return err
}

// collect seals the complete new files at rels (nil: the whole
// directory) into the pending pack, sending full packs; the rest waits
// for flush or the next Publish.
func (p *Publisher) collect(ctx context.Context, rels []string) error {
	if rels == nil {
		rels = []string{"."}
	}
	files, err := scanPaths(ctx, p.o.Root, rels)
	if err != nil {
		return fmt.Errorf("scanning the cache directory: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.collectLocked(ctx, files)
}

// flushDue returns when the pending files are due to be sent after
// waiting delay, and false when none is pending.
func (p *Publisher) flushDue(delay time.Duration) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		return time.Time{}, false
	}
	return p.pendingSince.Add(delay), true
}

// flush sends the pending files.
func (p *Publisher) flush(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flushLocked(ctx)
}

func (o Options) packCaps() (files int, bytes int64) {
	files, bytes = o.PackFiles, o.PackBytes
	if files <= 0 {
		files = 4096
	}
	if bytes <= 0 {
		bytes = 64 << 20
	}
	return files, bytes
}

// collectLocked seals files not done or pending into the pending pack,
// sending it whenever it is full; p.mu is held.
func (p *Publisher) collectLocked(ctx context.Context, files []localFile) error {
	p.stats.Examined += len(files)
	var todo []localFile
	for _, f := range files {
		if p.done[f.rel] || p.pendingNames[f.rel] {
			continue
		}
		if s, ok := p.skipped[f.rel]; ok && s.size == f.size && s.mod.Equal(f.modTime) {
			continue // unchanged since it was found incomplete
		}
		todo = append(todo, f)
	}
	if len(todo) == 0 {
		return nil
	}
	sort.Slice(todo, func(i, j int) bool { return todo[i].rel < todo[j].rel })
	maxFiles, maxBytes := p.o.packCaps()
	now := time.Now()
	var errs []error
	for _, f := range todo {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		data, err := readLocal(p.o.Root, f)
		if err != nil {
			continue // removed or replaced meanwhile: the next scan sees it
		}
		if err := checkContent(f.kind, f.rel, data, p.o.SigningKey); err != nil {
			p.skipped[f.rel] = fileSig{f.size, f.modTime}
			p.stats.Incomplete++
			continue
		}
		delete(p.skipped, f.rel)
		m, err := seal(f.rel, data, p.o.SigningKey, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(p.pending) > 0 && (len(p.pending) >= maxFiles || p.pendingBytes+int64(len(m.Sealed)) > maxBytes) {
			if err := p.flushLocked(ctx); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		if len(p.pending) == 0 {
			p.pendingSince = time.Now()
		}
		p.pending = append(p.pending, m)
		p.pendingNames[m.Name] = true
		p.pendingBytes += int64(len(data))
	}
	if len(p.pending) >= maxFiles || p.pendingBytes >= maxBytes {
		errs = append(errs, p.flushLocked(ctx))
	}
	return errors.Join(errs...)
}

// flushLocked sends the pending files as one pack; p.mu is held. On
// failure they are dropped from pending, to be found again by a scan.
func (p *Publisher) flushLocked(ctx context.Context) error {
	if len(p.pending) == 0 {
		return nil
	}
	batch, bytes := p.pending, p.pendingBytes
	p.pending, p.pendingBytes, p.pendingNames = nil, 0, map[string]bool{}
	if err := p.putPack(ctx, batch); err != nil {
		return err
	}
	for _, m := range batch {
		p.done[m.Name] = true
		p.stats.Files++
	}
	p.stats.Packs++
	p.stats.Bytes += bytes
	return nil
}

// putPack publishes one pack, then its index: an index on the store always
// names a complete pack. A pack or index already there (the same files,
// published by another host) is success.
func (p *Publisher) putPack(ctx context.Context, members []Member) error {
	pack, index, err := EncodeTaggedPack(p.o.Origin, members)
	if err != nil {
		return err
	}
	id := packID(pack)
	// With a signing key the index is signed too: an index that names
	// files is what makes every host take them as published.
	index, err = sealIndex(id, index, p.o.SigningKey, time.Now())
	if err != nil {
		return err
	}
	for _, obj := range []struct {
		name string
		data []byte
	}{{Prefix + id + packSuffix, pack}, {Prefix + id + indexSuffix, index}} {
		if err := p.store.PutIfAbsent(ctx, obj.name, obj.data); err != nil && !errors.Is(err, blob.ErrExist) {
			return fmt.Errorf("publishing %s: %w", obj.name, err)
		}
	}
	// The local copy of the index spares this host's next fill a request.
	_, _ = atomicfile.Publish(stateRel+"/"+id+indexSuffix, index, p.o.writeOpts())
	return nil
}
