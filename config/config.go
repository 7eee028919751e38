// Package config holds xlacache's options: what they mean, their defaults,
// and how they are read from the environment and validated.
//
// Every option can be set from Go (fill an Options) or from the environment
// (FromEnv). The zero Options means "caching off": with no directory the
// library compiles normally and never touches the disk.
package config

import (
	"os"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// Role says whether this process may write to the shared cache tiers.
type Role int

const (
	// RoleAuto makes process index 0 the writer and every other process a
	// reader, as JAX does for a multi-host job.
	RoleAuto Role = iota
	// RoleWriter always writes (publishes entries, updates subcaches).
	RoleWriter
	// RoleReader never writes to the cache directory, not even access times.
	RoleReader
)

// Subcache names one of the compiler-owned caches that live beside
// xlacache's executable tier. Names follow XLA's DebugOptions so a JAX user
// recognises them; each has a short alias.
type Subcache string

const (
	// SubcacheAutotune is the per-kernel autotuning cache
	// (XLA: xla_gpu_per_fusion_autotune_cache_dir; alias "autotune").
	SubcacheAutotune Subcache = layout.XLAAutotuneDir
	// SubcacheKernels is the compiled-kernel cache
	// (XLA: xla_gpu_kernel_cache_file; alias "kernels").
	SubcacheKernels Subcache = layout.XLAKernelFile
)

// Source says where an option's value came from, for `xlacache env`.
type Source string

const (
	SourceDefault Source = "default"
	SourceEnv     Source = "env"
	SourceCode    Source = "code"
)

// Options configures a cache. Build one with Defaults or FromEnv, then
// adjust fields from Go before calling Validate (cache.Open validates too).
type Options struct {
	// Dir is the one cache directory (XLACACHE_DIR). Empty: caching off.
	Dir string
	// Subcaches are the compiler subcaches turned on
	// (XLACACHE_ENABLE_XLA_CACHES). Default: autotune only, as in JAX.
	Subcaches []Subcache
	// SubcachesExplicit is true when the user chose Subcaches (env or code)
	// rather than taking the default; a backend whose kernel cache cannot
	// clash (the cpu backend names kernels by content) may then widen the
	// default to all subcaches.
	SubcachesExplicit bool
	// BinarySizes is true when the user wrote a size option in binary
	// units (10GiB): the CLI then prints sizes in binary units too
	// (FormatSize), else in decimal ones.
	BinarySizes bool
	// MinCompileTime: compilations faster than this are not stored
	// (XLACACHE_MIN_COMPILE_TIME_SECS, default 1s).
	MinCompileTime time.Duration
	// MinEntrySize: entries smaller than this many bytes are not stored
	// (XLACACHE_MIN_ENTRY_SIZE_BYTES, default 0).
	MinEntrySize int64
	// MaxSize bounds the bytes of every tier together, subcaches included
	// (XLACACHE_MAX_SIZE); <= 0 means unbounded.
	MaxSize int64
	// ProcessIndex is this process's index in a multi-process job
	// (XLACACHE_PROCESS_INDEX, else the launcher's rank variable, else 0).
	ProcessIndex int
	// Role decides writer or reader (XLACACHE_ROLE: auto, writer, reader).
	Role Role
	// ExplainMisses logs, for each miss, which key component differs from
	// the closest stored entry (XLACACHE_EXPLAIN_MISSES).
	ExplainMisses bool
	// DirMode and FileMode are the permissions of what the cache creates
	// (XLACACHE_DIR_MODE / XLACACHE_FILE_MODE, default 0700 / 0600).
	DirMode, FileMode os.FileMode
	// WaitTimeout bounds how long a process waits for another process that
	// is compiling the same key (XLACACHE_WAIT_SECS).
	WaitTimeout time.Duration
	// LeaseStale is how long a compiling process's lease heartbeat may
	// stay unchanged before others take the lease over
	// (XLACACHE_LEASE_STALE_SECS); 0 means DefaultLeaseStale. Raise it on
	// network filesystems with long attribute caching.
	LeaseStale time.Duration
	// LeaseNoPIDCheck turns off the same-host shortcut that declares a
	// lease holder dead as soon as its pid is gone
	// (XLACACHE_LEASE_PID_CHECK=0).
	LeaseNoPIDCheck bool
	// AllowSharedDir lets the cache use a directory that another user owns
	// or that group or others can write (XLACACHE_ALLOW_SHARED_DIR). Such
	// a directory is otherwise refused, as ssh refuses a shared ~/.ssh: its
	// other writers could plant entries. Set it only with SigningKey; a
	// signing key alone also allows it, since entries are then verified.
	AllowSharedDir bool
	// SharedURL is an optional shared object-store tier, s3://bucket/prefix
	// (XLACACHE_SHARED_URL).
	SharedURL string
	// SharedMaxObjectSize bounds the size of a shared-tier object that is
	// read (XLACACHE_SHARED_MAX_OBJECT_SIZE); 0 means
	// DefaultSharedMaxObjectSize. Anyone who can write the bucket can plant
	// a huge object under a predictable name, so a larger object is a miss,
	// found from its size before any of it is read. The bound in force is
	// EffectiveSharedMaxObjectSize: never more than half the memory the
	// process can still allocate.
	SharedMaxObjectSize int64
	// CPUThreads bounds the threads the cpu backend's kernels run on
	// (XLACACHE_CPU_THREADS); 0 means DefaultCPUThreads, the CPUs in the
	// process's affinity mask. See EffectiveCPUThreads.
	CPUThreads int
	// SigningKey, when set, makes writers sign entries and every process
	// refuse entries whose signature does not verify: an HMAC secret
	// (XLACACHE_SIGNING_KEY or XLACACHE_SIGNING_KEY_FILE) or Ed25519 keys
	// (XLACACHE_SIGNING_PRIVATE_KEY_FILE, XLACACHE_VERIFY_KEYS,
	// XLACACHE_VERIFY_KEYS_FILE). Keys that cannot sign (Ed25519 public
	// keys alone) make the process a reader of the signed tiers: it never
	// stores, publishes, repairs or removes shared objects. Nil: unsigned.
	SigningKey *sign.Keys

	// MetricsFile, when set, is where the process writes its counters in
	// the Prometheus text format, every minute and when the cache closes
	// (XLACACHE_METRICS_FILE; the node exporter's textfile collector
	// reads *.prom files). It must be outside Dir: readers never write
	// there.
	MetricsFile string
	// RequireHit turns a compile the cache could not serve into a
	// warning or a failure (XLACACHE_REQUIRE_HIT; default off).
	RequireHit RequireHit

	// Sources records where each option came from, by env var name.
	Sources map[string]Source
}
