package cache

import (
	"context"
)

// KeyPart is one named component of a cache key. Backends supply the parts;
// the cache hashes each one separately (so a miss can be explained by the
// component that differs) and then hashes the digests together.
//
// Conventional names: "program" (canonical program text, debug locations
// stripped), "options" (normalized compile options, cache-path and dump
// options removed), "backend" (backend identity and version), "topology"
// (devices the program is compiled for).
type KeyPart struct {
	Name string
	Data []byte
}

// Program is what a backend compiles: its source text and its compile
// options in the backend's own serialization.
type Program struct {
	// Name is the module name; it starts the key text "<name>-<hex>".
	Name string
	// Text is the program source (StableHLO text for the cpu backend).
	Text []byte
	// Options are backend-specific serialized compile options.
	Options []byte
}

// Executable is a compiled program. The cache stores what Serialize returns
// and hands it back to Backend.Load.
type Executable interface {
	Serialize() ([]byte, error)
}

// Backend compiles programs. Implementations must be safe for concurrent use.
type Backend interface {
	// Name identifies the backend ("cpu", "xla"); it is part of every key.
	Name() string
	// KeyParts returns the components that identify what Compile would
	// produce for p on this machine.
	KeyParts(ctx context.Context, p Program) ([]KeyPart, error)
	// Compile compiles p. It may use the backend subcaches through env.
	Compile(ctx context.Context, p Program, env *Session) (Executable, error)
	// Load turns bytes produced by Executable.Serialize back into an
	// executable. The bytes have passed the cache's integrity checks, but a
	// backend must still reject anything it cannot parse with an error.
	Load(ctx context.Context, data []byte, env *Session) (Executable, error)
}

// ProgramTextPart names the key part a FastKeyer puts where KeyParts puts
// "program": the program's exact bytes.
const ProgramTextPart = "program.text"

// FastKeyer is an optional Backend interface that lets a warm start skip
// parsing the program, like Go's build cache maps an action ID to an
// output ID. FastKeyParts returns exactly the parts KeyParts would return
// (same names, same data: options, backend identity, topology, ...), except
// that the "program" part (derived from the parsed program) is replaced by
// one named ProgramTextPart holding p.Text unchanged, and it must not parse
// p. Compile keeps, per such key, an alias entry naming the full key
// (alias.go): a hit through it loads the executable without calling
// KeyParts. Whatever changes KeyParts' other parts must change these too,
// and a change to how a text is read (the parser) must change one of them
// (the backend's version), or an alias could name an executable the text
// no longer compiles to.
type FastKeyer interface {
	FastKeyParts(ctx context.Context, p Program) ([]KeyPart, error)
}
