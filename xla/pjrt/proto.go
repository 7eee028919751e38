package pjrt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Protocol is the version string that starts every request; the C wrapper
// (csrc/wrapper.c, XC_PROTO) sends the same.
const Protocol = "xlacache-pjrt/1"

// Frame types. Wrapper to helper: request, load accepted, load failed,
// compiled, compile failed. Helper to wrapper: load this, compile, heart
// beat, done.
const (
	frameRequest   = 'Q'
	frameLoadOK    = 'K'
	frameLoadFail  = 'F'
	frameCompiled  = 'C'
	frameCompErr   = 'E'
	frameLoad      = 'L'
	frameCompile   = 'C'
	frameHeartbeat = 'H'
	frameDone      = 'D'
)

// Done statuses (first byte of a done frame).
const (
	doneHit      = 'h' // an entry was loaded
	doneStored   = 's' // compiled and stored
	doneCompiled = 'c' // compiled, not stored (reader, threshold, failure)
	doneError    = 'e' // no executable from the cache: the wrapper compiles
	doneRefused  = 'r' // XLACACHE_REQUIRE_HIT=fail refused the compile; a message follows
)

// maxFrame bounds a frame's payload, as the wrapper's XC_MAX_FRAME does.
const maxFrame = 1 << 30

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", len(payload), maxFrame)
	}
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if _, err := w.Write(append(h[:], payload...)); err != nil {
		return fmt.Errorf("writing frame %q: %w", typ, err)
	}
	return nil
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, fmt.Errorf("reading frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", n, maxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, fmt.Errorf("reading %d-byte frame %q: %w", n, h[0], err)
	}
	return h[0], p, nil
}

// Request is what the wrapper sends for one compile.
type Request struct {
	// Format is the program's format as the PJRT client gave it ("mlir",
	// "hlo", "hlo_with_config").
	Format string
	// Program is the program's bytes (StableHLO text or bytecode, HLO).
	Program []byte
	// Options is the serialized CompileOptionsProto as the client gave it.
	Options []byte
	// Plugin is the inner plugin's path.
	Plugin string
	// APIVersion is the inner plugin's PJRT C API version, "major.minor".
	APIVersion string
	// Platform and PlatformVersion are the client's, as PJRT reports them.
	Platform, PlatformVersion string
	// Topology lists the process index and every device (id, process,
	// kind), one per line, as the client sees them.
	Topology string
}

var errShort = errors.New("truncated request")

// parseRequest decodes a request payload: length-prefixed fields in the
// order the wrapper writes them.
func parseRequest(p []byte) (Request, error) {
	var fields [9][]byte
	for i := range fields {
		if len(p) < 4 {
			return Request{}, fmt.Errorf("field %d: %w", i, errShort)
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return Request{}, fmt.Errorf("field %d: %w", i, errShort)
		}
		fields[i], p = p[:n], p[n:]
	}
	if len(p) != 0 {
		return Request{}, fmt.Errorf("%d bytes after the last field", len(p))
	}
	if string(fields[0]) != Protocol {
		return Request{}, fmt.Errorf("protocol %q, want %q (wrapper and helper from different xlacache builds?)", fields[0], Protocol)
	}
	return Request{
		Format:          string(fields[1]),
		Program:         fields[2],
		Options:         fields[3],
		Plugin:          string(fields[4]),
		APIVersion:      string(fields[5]),
		Platform:        string(fields[6]),
		PlatformVersion: string(fields[7]),
		Topology:        string(fields[8]),
	}, nil
}

// encodeRequest is parseRequest's inverse (tests speak as the wrapper).
func encodeRequest(r Request) []byte {
	var out []byte
	for _, f := range [][]byte{[]byte(Protocol), []byte(r.Format), r.Program, r.Options,
		[]byte(r.Plugin), []byte(r.APIVersion), []byte(r.Platform), []byte(r.PlatformVersion), []byte(r.Topology)} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

// stored is what the executables tier holds for a PJRT program: the
// identity of the plugin that compiled it (the key's "backend" part: the
// plugin file's hash, platform, versions), then the entry the wrapper
// sent. The key already covers the identity; keeping it in the entry
// too makes an entry that reaches another plugin's key (copied between
// caches, planted without a signing key) fail before the inner plugin
// sees it: a real XLA:CPU plugin loads another release's executable with
// only a log line, and computes different results with it.
type stored struct {
	Identity string
	Entry    entry
}

func (s stored) encode() []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(s.Identity)))
	out = append(out, s.Identity...)
	return append(out, s.Entry.encode()...)
}

func decodeStored(p []byte) (stored, error) {
	if len(p) < 4 {
		return stored{}, errors.New("stored entry shorter than its header")
	}
	n := binary.BigEndian.Uint32(p)
	if uint64(n) > uint64(len(p)-4) {
		return stored{}, fmt.Errorf("identity length %d beyond the %d-byte entry", n, len(p))
	}
	e, err := decodeEntry(p[4+n:])
	if err != nil {
		return stored{}, err
	}
	return stored{Identity: string(p[4 : 4+n]), Entry: e}, nil
}

// entry is what the wrapper and helper exchange: the signature of an
// executable, then the inner plugin's serialized executable.
type entry struct {
	Signature  string
	Executable []byte
}

func (e entry) encode() []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(e.Signature)))
	out = append(out, e.Signature...)
	return append(out, e.Executable...)
}

func decodeEntry(p []byte) (entry, error) {
	if len(p) < 4 {
		return entry{}, errors.New("entry shorter than its header")
	}
	n := binary.BigEndian.Uint32(p)
	if uint64(n) > uint64(len(p)-4) {
		return entry{}, fmt.Errorf("signature length %d beyond the %d-byte entry", n, len(p))
	}
	e := entry{Signature: string(p[4 : 4+n]), Executable: p[4+n:]}
	if len(e.Executable) == 0 {
		return entry{}, errors.New("entry holds no executable")
	}
	return e, nil
}
