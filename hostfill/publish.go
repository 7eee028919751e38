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
	"github.com/xlacache/xlacache/internal/subcache"
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
	Kernels subcache.MirrorStats
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
	mirror  *subcache.Mirror
}

type fileSig struct {
	size int64
	mod  time.Time
}

// newPublisher returns a Publisher of o.Root's files to store; remote is
// what the store already holds (FillStats.Remote), or nil.
func newPublisher(store blob.Store, o Options, remote map[string]bool) *Publisher {
	p := &Publisher{store: store, o: o, done: map[string]bool{}, skipped: map[string]fileSig{}}
	for n := range remote {
		p.done[n] = true
	}
	if o.Kernels {
		p.mirror = subcache.NewMirror(store, subcache.MirrorOptions{Root: o.Root, Kernels: true, SigningKey: o.SigningKey,
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
// on the store. With kernels set (the final publish, once the command has
// exited) it also publishes the kernel cache file, which XLA may rewrite
// in place while it runs.
func (p *Publisher) Publish(ctx context.Context, kernels bool) error {
	files, err := scanLocal(p.o.Root)
	if err != nil {
		return fmt.Errorf("scanning the cache directory: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	err = p.publishLocked(ctx, files)
	if kernels && p.mirror != nil {
		ks, kerr := p.mirror.Push(ctx)
		p.stats.Kernels.Pushed += ks.Pushed
		p.stats.Kernels.Bytes += ks.Bytes
		err = errors.Join(err, kerr)
	}
	return err
}

// publishLocked packs and publishes files not done; p.mu is held.
func (p *Publisher) publishLocked(ctx context.Context, files []localFile) error {
	var todo []localFile
	for _, f := range files {
		if p.done[f.rel] {
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
	maxFiles, maxBytes := p.o.PackFiles, p.o.PackBytes
	if maxFiles <= 0 {
		maxFiles = 4096
	}
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	now := time.Now()
	var batch []Member
	var batchBytes int64
	var errs []error
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := p.putPack(ctx, batch)
		if err == nil {
			for _, m := range batch {
				p.done[m.Name] = true
				p.stats.Files++
			}
			p.stats.Packs++
			p.stats.Bytes += batchBytes
		}
		batch, batchBytes = nil, 0
		return err
	}
	for _, f := range todo {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		data, err := atomicfile.ReadRegular(p.o.Root, f.rel, maxFileSize)
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
		if len(batch) > 0 && (len(batch) >= maxFiles || batchBytes+int64(len(m.Sealed)) > maxBytes) {
			if err := flush(); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		batch = append(batch, m)
		batchBytes += int64(len(data))
	}
	if err := flush(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// putPack publishes one pack, then its index: an index on the store always
// names a complete pack. A pack or index already there (the same files,
// published by another host) is success.
func (p *Publisher) putPack(ctx context.Context, members []Member) error {
	pack, index, err := EncodePack(members)
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
