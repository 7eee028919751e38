package rawfiles

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// The kernel cache file travels as content-addressed parts
// (layout.XLAKernelPartObject: the SHA-256 of the part's payload), each a
// serialized KernelCacheProto; a pull appends to the local file every
// record (kernel) a part has and the file lacks.
//
// Versions before issue 20 item 19 pushed the whole local file as a new
// part whenever it changed, so N jobs each extending the file stored
// 1+2+…+N file sizes, and a pull held every part in memory at once. Now:
//   - a push publishes a delta: only the records no verified part on the
//     store has (pushKernels);
//   - a writer compacts: once the parts add up to more than
//     compactFactor times what their distinct records take (or there are
//     more than maxKernelParts of them), it publishes its local file,
//     which holds every record the store has, as one part; a part whose
//     records another verified part holds is deleted once that other part
//     has been on the store for CompactGrace, so a reader that listed the
//     old parts before the merged one appeared has had that long to fetch
//     them (compactKernels);
//   - a pull streams each part to an unlinked temporary file, verifying its
//     checksum, signature and format on the way, then appends the new
//     records to the local file: memory does not grow with the parts'
//     sizes (pullKernels).
//
// Parts stay what they were (a sealed KernelCacheProto named by its
// content), so a bucket written by either version works with the other:
// an old reader merges delta and compacted parts like any other, and a new
// writer takes an old version's whole-file parts as parts it has to
// compact.

const (
	// defaultCompactGrace is CompactGrace's default: far longer than a pull
	// takes, and than the clock skew between a host and the store.
	defaultCompactGrace = 15 * time.Minute
	// compactFactor: a writer compacts once the parts' sizes add up to
	// more than this many times the size of their distinct records.
	compactFactor = 2
	// maxKernelParts: a writer compacts once there are more parts than
	// this, whatever their sizes, since a fresh host fetches each one.
	maxKernelParts = 16
	// copyBufSize is the buffer of every streamed copy and walk.
	copyBufSize = 64 << 10
)

// recordRef is one top-level record of a kernel cache file or part.
type recordRef struct {
	off, n int64
	sum    [sha256.Size]byte
}

// partIndex is what a verified part holds: its records' identities.
type partIndex struct {
	sums map[[sha256.Size]byte]int64 // record SHA-256 -> record length
}

// stagedPart is a verified part whose payload sits in an unlinked
// temporary file.
type stagedPart struct {
	f    *os.File
	recs []recordRef
}

// tempFile creates a temporary file in root, named so that scans skip it
// and stale-temporary sweeps remove it if this process dies, and unlinks
// it at once where the system allows (it lives on as long as f is open).
func tempFile(root *os.Root) (*os.File, func(), error) {
	var rnd [12]byte
	rand.Read(rnd[:])
	name := layout.TempPrefix + "kernel-part-" + hex.EncodeToString(rnd[:])
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a temporary file: %w", err)
	}
	unlinked := root.Remove(name) == nil
	return f, func() {
		f.Close()
		if !unlinked {
			root.Remove(name)
		}
	}, nil
}

// copyRange copies n bytes of src from off to w through buf, which keeps
// the copy from allocating (io.Copy to an *os.File through a SectionReader
// would allocate per call).
func copyRange(w io.Writer, src io.ReaderAt, off, n int64, buf []byte) error {
	for n > 0 {
		k, err := src.ReadAt(buf[:min(n, int64(len(buf)))], off)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return werr
			}
			off += int64(k)
			n -= int64(k)
		}
		if n > 0 && err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// objectLimit is the bound on what the mirror reads of one object.
func (m *Mirror) objectLimit() int64 {
	return config.Options{SharedMaxObjectSize: m.opts.MaxObjectSize}.EffectiveSharedMaxObjectSize()
}

// loadPart streams the part obj into a temporary file in root, checking it
// as Unseal and verifyKernelPart do (envelope, checksum, signature when a
// key is set, content matching the name, well-formed records) without
// holding it in memory. ok is false when there is nothing to use: the part
// vanished since it was listed, or it was refused (counted in st, its
// error added to bad). err is a failure of the store or of the local
// directory, which ends the caller's pull or push. The caller calls done
// when it is through with the part.
func (m *Mirror) loadPart(ctx context.Context, root *os.Root, obj string, buf []byte, st *MirrorStats, bad *[]error) (p *stagedPart, done func(), ok bool, err error) {
	refuse := func(format string, args ...any) (*stagedPart, func(), bool, error) {
		st.Refused++
		*bad = append(*bad, fmt.Errorf("%w: %s: %s", ErrBadObject, obj, fmt.Sprintf(format, args...)))
		return nil, nil, false, nil
	}
	rc, info, err := m.objs.Open(ctx, obj)
	switch {
	case errors.Is(err, blob.ErrNotExist):
		return nil, nil, false, nil
	case errors.Is(err, blob.ErrTooLarge):
		return refuse("%v", err)
	case err != nil:
		return nil, nil, false, fmt.Errorf("fetching %s: %w", obj, err)
	}
	defer rc.Close()
	if limit := m.objectLimit(); limit > 0 && info.Size > limit {
		return refuse("%v: %d bytes, more than %d", blob.ErrTooLarge, info.Size, limit)
	}
	// The envelope, as Unseal reads it.
	var hdr [rawHeaderLen]byte
	if n, err := io.ReadFull(rc, hdr[:]); err != nil {
		if n < len(hdr) && (err == io.EOF || err == io.ErrUnexpectedEOF) {
			return refuse("not a sealed subcache object")
		}
		return nil, nil, false, fmt.Errorf("fetching %s: %w", obj, err)
	}
	switch {
	case string(hdr[:6]) != string(rawMagic):
		return refuse("not a sealed subcache object")
	case hdr[6] != rawVersion:
		return refuse("envelope version %d unknown", hdr[6])
	}
	scheme, known := rawScheme(hdr[7])
	if !known {
		return refuse("unknown flags %#x", hdr[7])
	}
	rest := info.Size - rawHeaderLen
	var mac []byte
	if n := scheme.SigSize(); n > 0 {
		mac = make([]byte, n)
		if _, err := io.ReadFull(rc, mac); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return refuse("truncated signature")
			}
			return nil, nil, false, fmt.Errorf("fetching %s: %w", obj, err)
		}
		rest -= int64(len(mac))
	}
	key := m.opts.SigningKey
	if key.Enabled() && mac == nil {
		// Refused before its payload is downloaded.
		return refuse("unsigned, and a signing key is set")
	}
	f, cleanup, err := tempFile(root)
	if err != nil {
		return nil, nil, false, err
	}
	keep := false
	defer func() {
		if !keep {
			cleanup()
		}
	}()
	sum := sha256.New()
	var hm *sign.Hash
	w := io.MultiWriter(f, sum)
	if key.Enabled() {
		if hm, err = rawVerifier(obj, key, scheme); err != nil {
			// Another scheme than this process's: refused before its
			// payload is downloaded, and left in place.
			return refuse("%v", rawSigError(err))
		}
		w = io.MultiWriter(f, sum, hm)
	}
	// The reader yields at most Info.Size bytes (blob.Store.Open); one more
	// is asked for to catch a store that misreports it.
	n, err := io.CopyBuffer(w, io.LimitReader(rc, max(rest, 0)+1), buf)
	if err != nil {
		return nil, nil, false, fmt.Errorf("fetching %s: %w", obj, err)
	}
	if n != rest {
		return nil, nil, false, fmt.Errorf("fetching %s: body of %d bytes where the store reported %d", obj, n, rest)
	}
	var got [sha256.Size]byte
	sum.Sum(got[:0])
	if !hmac.Equal(got[:], hdr[8:rawHeaderLen]) {
		return refuse("checksum mismatch")
	}
	if hm != nil {
		if err := hm.Verify(mac); err != nil {
			return refuse("%v", rawSigError(err))
		}
	}
	if obj != layout.XLAKernelPartObject(got) {
		return refuse("content does not match the part's name")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, false, fmt.Errorf("staging %s: %w", obj, err)
	}
	p = &stagedPart{f: f}
	err = walkRecords(bufio.NewReaderSize(f, len(buf)), func(off, n int64, sum [sha256.Size]byte) error {
		p.recs = append(p.recs, recordRef{off, n, sum})
		return nil
	})
	if err != nil {
		return refuse("%v", err)
	}
	keep = true
	return p, cleanup, true, nil
}

// index remembers the records of the verified part obj, so that pushes
// know what the store has without fetching it again.
func (m *Mirror) index(obj string, recs []recordRef) {
	pi := &partIndex{sums: make(map[[sha256.Size]byte]int64, len(recs))}
	for _, r := range recs {
		pi.sums[r.sum] = r.n
	}
	m.mu.Lock()
	m.parts[obj] = pi
	m.mu.Unlock()
}

// openLocal opens the local kernel cache file and walks its records. f is
// nil when there is no file. An unparseable file is an error: nothing is
// merged into it, and it is not published.
func (m *Mirror) openLocal(root *os.Root) (f *os.File, recs []recordRef, whole [sha256.Size]byte, err error) {
	f, _, err = atomicfile.OpenRegular(root, layout.XLAKernelFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, whole, nil
	}
	if err != nil {
		return nil, nil, whole, fmt.Errorf("reading %s: %w", layout.XLAKernelFile, err)
	}
	h := sha256.New()
	err = walkRecords(bufio.NewReaderSize(io.TeeReader(f, h), copyBufSize), func(off, n int64, sum [sha256.Size]byte) error {
		recs = append(recs, recordRef{off, n, sum})
		return nil
	})
	if err != nil {
		f.Close()
		return nil, nil, whole, fmt.Errorf("local kernel cache is not protobuf: %w", err)
	}
	h.Sum(whole[:0])
	return f, recs, whole, nil
}

// pullKernels appends to the local kernel cache file the records of the
// parts this Mirror has not merged yet that the file lacks, one part at a
// time, streamed: what it holds in memory is the records' identities, not
// their bytes.
func (m *Mirror) pullKernels(ctx context.Context, root *os.Root, st *MirrorStats) error {
	objs, err := m.objs.List(ctx, layout.XLAKernelPartsPrefix)
	if err != nil {
		return fmt.Errorf("listing %s: %w", KernelParts, err)
	}
	var pending []string
	m.mu.Lock()
	for _, o := range objs {
		if !m.merged[o.Name] {
			pending = append(pending, o.Name)
		}
	}
	m.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	dst := layout.XLAKernelFile
	lf, recs, _, err := m.openLocal(root)
	if err != nil {
		return err
	}
	have := make(map[[sha256.Size]byte]struct{}, len(recs))
	for _, r := range recs {
		have[r.sum] = struct{}{}
	}
	if lf != nil {
		lf.Close()
	}
	buf := make([]byte, copyBufSize)
	var adds *os.File
	var addN int64
	var merged []string
	var errs []error
	for _, obj := range pending {
		p, done, ok, err := m.loadPart(ctx, root, obj, buf, st, &errs)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if !ok {
			continue
		}
		m.index(obj, p.recs)
		for _, r := range p.recs {
			if _, dup := have[r.sum]; dup {
				continue
			}
			if adds == nil {
				f, cleanup, err := tempFile(root)
				if err != nil {
					done()
					return errors.Join(append(errs, err)...)
				}
				defer cleanup()
				adds = f
			}
			if err := copyRange(adds, p.f, r.off, r.n, buf); err != nil {
				done()
				return errors.Join(append(errs, fmt.Errorf("staging %s: %w", obj, err))...)
			}
			have[r.sum] = struct{}{}
			addN += r.n
		}
		done()
		merged = append(merged, obj)
	}
	if addN > 0 {
		err := atomicfile.ReplaceFrom(dst, func(w io.Writer) error {
			// The local file as it is now, then what the parts add.
			lf, _, err := atomicfile.OpenRegular(root, dst)
			switch {
			case err == nil:
				_, err = io.Copy(w, lf)
				lf.Close()
				if err != nil {
					return err
				}
			case !errors.Is(err, fs.ErrNotExist):
				return err
			}
			return copyRange(w, adds, 0, addN, buf)
		}, atomicfile.Options{Perm: m.opts.FileMode, DirPerm: m.opts.DirMode, Root: root})
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("writing %s: %w", dst, err))...)
		}
		st.Bytes += addN
	}
	m.mu.Lock()
	for _, obj := range merged {
		m.merged[obj] = true
	}
	m.mu.Unlock()
	st.Pulled += len(merged)
	return errors.Join(errs...)
}

// indexParts indexes every part of infos not indexed yet, streaming each
// (loadPart). A part that fails verification is left out, uncounted: a
// push does not report on what pulls refuse. err is a store failure.
func (m *Mirror) indexParts(ctx context.Context, root *os.Root, infos []blob.Info, buf []byte) error {
	var st MirrorStats
	var bad []error
	for _, in := range infos {
		m.mu.Lock()
		_, known := m.parts[in.Name]
		m.mu.Unlock()
		if known {
			continue
		}
		p, done, ok, err := m.loadPart(ctx, root, in.Name, buf, &st, &bad)
		if err != nil {
			return err
		}
		if ok {
			m.index(in.Name, p.recs)
			done()
		}
	}
	return nil
}

// readRecords reads the records recs of f into one payload.
func readRecords(f *os.File, recs []recordRef) ([]byte, error) {
	var n int64
	for _, r := range recs {
		n += r.n
	}
	out := make([]byte, 0, n)
	for _, r := range recs {
		b := out[len(out) : int64(len(out))+r.n]
		if _, err := f.ReadAt(b, r.off); err != nil {
			return nil, err
		}
		out = out[:int64(len(out))+r.n]
	}
	return out, nil
}

// putPart publishes payload as a kernel part under its content's name;
// present already, it is checked and replaced only if no host can use it
// (repair). It returns the part's name and whether it was created.
func (m *Mirror) putPart(ctx context.Context, payload []byte, st *MirrorStats) (obj string, created bool, err error) {
	obj = layout.XLAKernelPartObject(sha256.Sum256(payload))
	sealed := Seal(obj, payload, m.opts.SigningKey)
	if limit := m.objectLimit(); limit > 0 && int64(len(sealed)) > limit {
		// Every reader would refuse it.
		return obj, false, fmt.Errorf("not publishing %s: %d bytes, more than the %d readers accept", obj, len(sealed), limit)
	}
	switch err := m.objs.PutIfAbsent(ctx, obj, sealed); {
	case err == nil:
		return obj, true, nil
	case errors.Is(err, blob.ErrExist):
		r, err := m.objs.Stat(ctx, obj)
		if err != nil && !errors.Is(err, blob.ErrNotExist) {
			return obj, false, fmt.Errorf("checking %s: %w", obj, err)
		}
		if err == nil {
			replaced, err := m.repair(ctx, r, sealed, verifyKernelPart)
			if err != nil {
				return obj, false, err
			}
			if replaced {
				st.Replaced++
			}
		}
		return obj, false, nil
	default:
		return obj, false, fmt.Errorf("publishing %s: %w", obj, err)
	}
}

// pushKernels publishes the records of the local kernel cache file that no
// verified part on the store holds, as one new part, then compacts the
// parts when they have grown (compactKernels).
func (m *Mirror) pushKernels(ctx context.Context, root *os.Root, st *MirrorStats) error {
	lf, recs, whole, err := m.openLocal(root)
	if err != nil {
		return fmt.Errorf("not publishing %s: %w", layout.XLAKernelFile, err)
	}
	if lf == nil {
		return nil
	}
	defer lf.Close()
	if len(recs) == 0 {
		return nil
	}
	wholeObj := layout.XLAKernelPartObject(whole)
	m.mu.Lock()
	done := m.pushed[wholeObj] || m.merged[wholeObj]
	m.mu.Unlock()
	if done {
		return nil // this very file was published or merged
	}
	infos, err := m.objs.List(ctx, layout.XLAKernelPartsPrefix)
	if err != nil {
		return fmt.Errorf("listing %s: %w", KernelParts, err)
	}
	buf := make([]byte, copyBufSize)
	if m.holdsFile(infos, wholeObj) {
		// The store has this very file as a part (as versions before deltas
		// published it): check it as such, without fetching the rest.
		data, err := atomicfile.ReadRegular(root, layout.XLAKernelFile, maxLocalFile)
		if err != nil {
			return fmt.Errorf("reading %s: %w", layout.XLAKernelFile, err)
		}
		if sha256.Sum256(data) == whole {
			if _, _, err := m.putPart(ctx, data, st); err != nil {
				return err
			}
			m.markPushed(wholeObj)
		}
	} else {
		if err := m.indexParts(ctx, root, infos, buf); err != nil {
			return err
		}
		remote := m.remoteRecords(infos)
		var delta []recordRef
		for _, r := range recs {
			if _, ok := remote[r.sum]; !ok {
				remote[r.sum] = r.n
				delta = append(delta, r)
			}
		}
		if len(delta) > 0 {
			payload, err := readRecords(lf, delta)
			if err != nil {
				return fmt.Errorf("reading %s: %w", layout.XLAKernelFile, err)
			}
			obj, created, err := m.putPart(ctx, payload, st)
			if err != nil {
				return err
			}
			if created {
				st.Pushed++
				st.Bytes += int64(len(payload))
			}
			m.index(obj, delta)
			m.markPushed(obj)
			if !m.holdsFile(infos, obj) {
				infos = append(infos, blob.Info{Name: obj, Size: int64(len(payload)), ModTime: m.now()})
			}
		}
		m.markPushed(wholeObj)
	}
	return m.compactKernels(ctx, root, lf, recs, infos, buf, st)
}

// holdsFile reports whether infos lists obj.
func (m *Mirror) holdsFile(infos []blob.Info, obj string) bool {
	for _, in := range infos {
		if in.Name == obj {
			return true
		}
	}
	return false
}

// markPushed records that the part obj is on the store with this host's
// content, so neither a push nor a pull of this Mirror handles it again.
func (m *Mirror) markPushed(obj string) {
	m.mu.Lock()
	m.pushed[obj] = true
	m.merged[obj] = true
	m.mu.Unlock()
}

// remoteRecords returns the records the indexed parts of infos hold.
func (m *Mirror) remoteRecords(infos []blob.Info) map[[sha256.Size]byte]int64 {
	out := map[[sha256.Size]byte]int64{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, in := range infos {
		if pi := m.parts[in.Name]; pi != nil {
			for s, n := range pi.sums {
				out[s] = n
			}
		}
	}
	return out
}

// now is the clock of compaction's grace, a seam for tests.
func (m *Mirror) now() time.Time {
	if m.clock != nil {
		return m.clock()
	}
	return time.Now()
}

// compactKernels bounds what the parts take. When they add up to more than
// compactFactor times their distinct records, or are more than
// maxKernelParts, and the local file (lf, whose records are recs) holds
// every record of every verified part, it publishes the local file as one
// part. Then it deletes each part whose records another verified part
// holds, once that other part has been on the store for CompactGrace.
// Parts that fail verification are neither counted nor deleted: a part
// this host cannot verify (another key) is not its to judge.
func (m *Mirror) compactKernels(ctx context.Context, root *os.Root, lf *os.File, recs []recordRef, infos []blob.Info, buf []byte, st *MirrorStats) error {
	if len(infos) < 2 {
		return nil
	}
	if err := m.indexParts(ctx, root, infos, buf); err != nil {
		return err
	}
	remote := m.remoteRecords(infos)
	// Parts another verified part holds are on their way out (after the
	// grace): they do not count, or every push within the grace would
	// compact again.
	idx := m.indexes(infos)
	var total, distinct int64
	live := 0
	for i, in := range infos {
		// A part this host cannot verify is not its to count or merge.
		if idx[i] != nil && !supersededIn(infos, idx, i) {
			total += in.Size
			live++
		}
	}
	for _, n := range remote {
		distinct += n
	}
	// The envelope's header and signature, per part.
	overhead := int64(live) * (rawHeaderLen + sha256.Size)
	if live > 1 && (total > compactFactor*distinct+overhead || live > maxKernelParts) {
		local := make(map[[sha256.Size]byte]struct{}, len(recs))
		var all []recordRef
		for _, r := range recs {
			if _, dup := local[r.sum]; !dup {
				local[r.sum] = struct{}{}
				if _, ok := remote[r.sum]; ok {
					all = append(all, r)
				}
			}
		}
		covers := true
		for s := range remote {
			if _, ok := local[s]; !ok {
				covers = false // the next pull brings them
				break
			}
		}
		if covers {
			payload, err := readRecords(lf, all)
			if err != nil {
				return fmt.Errorf("reading %s: %w", layout.XLAKernelFile, err)
			}
			obj := layout.XLAKernelPartObject(sha256.Sum256(payload))
			if !m.holdsFile(infos, obj) {
				if _, created, err := m.putPart(ctx, payload, st); err != nil {
					return err
				} else if created {
					st.Compacted++
				}
				m.index(obj, all)
				m.markPushed(obj)
				infos = append(infos, blob.Info{Name: obj, Size: int64(len(payload)), ModTime: m.now()})
			}
		}
	}
	return m.removeSuperseded(ctx, infos, st)
}

// removeSuperseded deletes each verified part of infos whose records a
// larger verified part holds (of two with the same records, the one with
// the greater name goes), once that larger part is older than
// CompactGrace: a reader that listed the parts before it appeared has had
// that long to fetch them, and every later reader lists the larger one.
// The order (size, then name) is strict, so of parts deleted by hosts at
// once, the greatest always stays, holding every record of the others.
func (m *Mirror) removeSuperseded(ctx context.Context, infos []blob.Info, st *MirrorStats) error {
	grace := m.opts.CompactGrace
	if grace <= 0 {
		grace = defaultCompactGrace
	}
	now := m.now()
	idx := m.indexes(infos)
	var errs []error
	for i, x := range infos {
		if idx[i] == nil {
			continue
		}
		for j, big := range infos {
			if j == i || idx[j] == nil || now.Sub(big.ModTime) < grace || !supersedes(big.Name, idx[j], x.Name, idx[i]) {
				continue
			}
			if err := m.objs.Delete(ctx, x.Name); err != nil {
				errs = append(errs, fmt.Errorf("removing superseded %s: %w", x.Name, err))
				break
			}
			st.Removed++
			m.mu.Lock()
			delete(m.parts, x.Name)
			m.mu.Unlock()
			break
		}
	}
	return errors.Join(errs...)
}

// indexes returns the index of each part of infos (nil: not verified).
func (m *Mirror) indexes(infos []blob.Info) []*partIndex {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := make([]*partIndex, len(infos))
	for i, in := range infos {
		idx[i] = m.parts[in.Name]
	}
	return idx
}

// supersededIn reports whether another verified part of infos holds the
// records of the verified part infos[i].
func supersededIn(infos []blob.Info, idx []*partIndex, i int) bool {
	if idx[i] == nil {
		return false
	}
	for j := range infos {
		if j != i && idx[j] != nil && supersedes(infos[j].Name, idx[j], infos[i].Name, idx[i]) {
			return true
		}
	}
	return false
}

// supersedes reports whether part a (named an) holds every record of part
// b (named bn) and comes after it in the order (more records, then the
// smaller name).
func supersedes(an string, a *partIndex, bn string, b *partIndex) bool {
	if len(a.sums) < len(b.sums) || (len(a.sums) == len(b.sums) && an >= bn) {
		return false
	}
	for s := range b.sums {
		if _, ok := a.sums[s]; !ok {
			return false
		}
	}
	return true
}
