package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Variables read outside this package, listed here so that the one table
// of options (Docs) names every XLACACHE_* variable: the cpu backend's C
// compiler, and the XLA integration's version and plugin (package xla reads
// them; its constants of the same names are these).
const (
	EnvCC = "XLACACHE_CC"
	// EnvCPUTune is how much the cpu backend autotunes: full, budget or off.
	EnvCPUTune    = "XLACACHE_CPU_TUNE"
	EnvXLAVersion = "XLACACHE_XLA_VERSION"
	EnvXLAPlugin  = "XLACACHE_XLA_PLUGIN"
	// EnvRuntimeTag names what `xlacache exec` cannot learn before JAX
	// starts (device kind, topology); package jobrun reads it.
	EnvRuntimeTag = "XLACACHE_RUNTIME_TAG"
	defaultCC     = "cc"
)

// Doc documents one row of the configuration table: the README's table
// (MarkdownTable) and the lines of `xlacache env` (EnvSettings) are made
// from Docs, and a test fails when the README's copy drifts.
type Doc struct {
	// Names are the variables of the row, the first one the option's.
	Names []string
	// Default and Meaning are the README's cells (Markdown).
	Default, Meaning string
	// Summary is the one line `xlacache env` shows ("" for rows that are
	// not XLACACHE_* options: AWS's variables).
	Summary string
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }

// Docs is every variable xlacache reads, in the order of the README and
// of `xlacache env`.
var Docs = []Doc{
	{Names: []string{"XLACACHE_DIR"}, Default: `unset: caching off`, Meaning: "The one cache directory. The CLI alone falls back to `<user cache dir>/xlacache` (`~/.cache/xlacache` on Linux); `--dir` overrides both.", Summary: "cache directory; empty turns caching off"},
	{Names: []string{"XLACACHE_ENABLE_XLA_CACHES"}, Default: "`autotune`; `all` for backends whose kernels are named by their content (cpu)", Meaning: "Compiler subcaches: `all`, `none`, or a comma list of `autotune` / `xla_gpu_per_fusion_autotune_cache_dir` and `kernels` / `xla_gpu_kernel_cache_file`. Case-insensitive. An unknown name is an error. The executables tier is on whenever a directory is set.", Summary: "compiler subcaches: all, none, or a list of autotune, kernels"},
	{Names: []string{"XLACACHE_MIN_COMPILE_TIME_SECS"}, Default: "`" + secs(DefaultMinCompileTime) + "`", Meaning: "Executables that compiled faster than this are not stored. Seconds (`0.5`) or a Go duration (`1m30s`). Applies to the executables tier only: autotune and kernel entries are always stored.", Summary: "executables that compiled faster than this (seconds) are not stored"},
	{Names: []string{"XLACACHE_MIN_ENTRY_SIZE_BYTES"}, Default: "`0`", Meaning: "Executables smaller than this are not stored. Accepts units (`64KiB`).", Summary: "executables smaller than this (bytes) are not stored"},
	{Names: []string{"XLACACHE_MAX_SIZE"}, Default: `unbounded`, Meaning: "Bound on the whole directory: every tier, XLA's subcaches and the quarantine. Least recently used files are removed first. Bytes or `500MB`, `10GiB`, `1.5TiB` (KB/MB/GB/TB are powers of 10, KiB/MiB/GiB/TiB powers of 2). `0` or a negative number (JAX's `-1`) means unbounded.", Summary: "bound on all tiers together, LRU eviction (bytes or 10GiB, 500MB)"},
	{Names: []string{"XLACACHE_PROCESS_INDEX"}, Default: "`0`", Meaning: "This process's index in its job. When unset, the first of these that is set: `OMPI_COMM_WORLD_RANK` (Open MPI), `PMI_RANK` (MPICH, Intel MPI), `SLURM_PROCID` (Slurm), `RANK` (torchrun).", Summary: "process index; falls back to OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, RANK"},
	{Names: []string{"XLACACHE_ROLE"}, Default: "`auto`", Meaning: "`auto` (index 0 writes, every other process reads), `writer`, or `reader`.", Summary: "auto (index 0 writes), writer, or reader"},
	{Names: []string{"XLACACHE_EXPLAIN_MISSES"}, Default: "`false`", Meaning: "On each miss, log which key component differs from the closest stored entry. Takes `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`.", Summary: "log which key component differs on a miss"},
	{Names: []string{"XLACACHE_DIR_MODE"}, Default: fmt.Sprintf("`%04o`", uint32(DefaultDirMode)), Meaning: "Permissions of the directories the cache creates, in octal. The owner must keep `rwx`. A group-writable mode (`0770`) is an explicit choice: the cache then accepts a group-writable directory (see [Security model](#security-model)).", Summary: "permissions of created directories"},
	{Names: []string{"XLACACHE_FILE_MODE"}, Default: fmt.Sprintf("`%04o`", uint32(DefaultFileMode)), Meaning: "Permissions of the files the cache creates, in octal. The owner must keep `rw`.", Summary: "permissions of created files"},
	{Names: []string{"XLACACHE_WAIT_SECS"}, Default: "`" + secs(DefaultWaitTimeout) + "`", Meaning: "How long a process waits for another one (or, with a shared tier, another host) compiling the same program before it compiles by itself. Also bounds how long `exec` waits for its host's fill, and the fill itself. `0` means do not wait.", Summary: "how long to wait for another process compiling the same program"},
	{Names: []string{"XLACACHE_LEASE_STALE_SECS"}, Default: "`" + secs(DefaultLeaseStale) + "`", Meaning: "How long a compiling process's lease heartbeat may stay unchanged before others take the lease over; applies to directory leases and to lease objects in the shared bucket. Raise it on network filesystems with long attribute caching (NFS `actimeo`). Seconds (`1.5`) or a Go duration, more than 0 and at most 24 hours; anything else is an error.", Summary: "silence (seconds) after which a compiling process's lease is taken over"},
	{Names: []string{"XLACACHE_LEASE_PID_CHECK"}, Default: "`1`", Meaning: "`0` turns off the same-host shortcut that declares a lease holder dead as soon as its pid is gone. Takes `1`/`0`, `true`/`false`, `yes`/`no`, `on`/`off`; anything else is an error.", Summary: "a same-host lease holder whose pid is gone is dead at once"},
	{Names: []string{"XLACACHE_SHARED_URL"}, Default: `unset`, Meaning: "Shared object-store tier: `s3://bucket[/prefix][?endpoint=URL&region=R&insecure=true&path-style=true&timeout=30s&cooldown=60s]` (S3 and compatible servers; see [docs/multihost.md](docs/multihost.md#endpoint-credentials-tls)) or `gs://bucket[/prefix][?timeout=30s&cooldown=60s]` (Google Cloud Storage with Application Default Credentials; see [docs/multihost.md](docs/multihost.md#google-cloud-storage-gs)).", Summary: "shared object-store tier, s3://bucket/prefix or gs://bucket/prefix"},
	{Names: []string{"XLACACHE_SHARED_MAX_OBJECT_SIZE"}, Default: "`4GiB`, at most half the available memory", Meaning: "Largest shared-tier object read; a larger one is a miss, refused from its size before any of it is read (someone who can write the bucket could plant a huge object). Sizes as for `XLACACHE_MAX_SIZE`, at least 1 byte. The bound in force is never more than half the memory the process can still allocate (cgroup limit, `MemAvailable`, rlimits). See [docs/multihost.md](docs/multihost.md#the-shared-tier-s3-compatible-object-store).", Summary: "largest shared-tier object read; never more than half the memory available"},
	{Names: []string{"XLACACHE_SIGNING_KEY"}, Default: `unset`, Meaning: `HMAC-SHA256 key. Writers sign what they store, and every process that has the key refuses unsigned or forged entries.`, Summary: "HMAC key: sign entries, refuse unsigned or forged ones"},
	{Names: []string{"XLACACHE_SIGNING_KEY_FILE"}, Default: `unset`, Meaning: "Reads the key from this file (a trailing newline is dropped). Setting it together with `XLACACHE_SIGNING_KEY` is an error.", Summary: "file holding the HMAC key (instead of XLACACHE_SIGNING_KEY)"},
	{Names: []string{"XLACACHE_SIGNING_PRIVATE_KEY_FILE"}, Default: `unset`, Meaning: "Ed25519 private key (PEM PKCS #8 as `xlacache keygen` and `openssl genpkey -algorithm ed25519` write, or the base64 or hex of the 32-byte seed). The process signs what it stores, and also accepts its own public key. For CI writers; see [Security model](#security-model). Setting it together with `XLACACHE_SIGNING_KEY` or `XLACACHE_SIGNING_KEY_FILE` is an error.", Summary: "Ed25519 private key file: this process signs what it stores"},
	{Names: []string{"XLACACHE_VERIFY_KEYS"}, Default: `unset`, Meaning: "Ed25519 public keys whose signatures are accepted: base64, hex or PEM, separated by commas or white space. Several at once during a key rotation (each signature names its key by id). Without `XLACACHE_SIGNING_PRIVATE_KEY_FILE` the process is a verify-only reader of the cache: it compiles what it misses but never stores, publishes, repairs or removes anything (one log line at open).", Summary: "Ed25519 public keys accepted (key ids shown); alone they make a verify-only reader"},
	{Names: []string{"XLACACHE_VERIFY_KEYS_FILE"}, Default: `unset`, Meaning: "A file of Ed25519 public keys as for `XLACACHE_VERIFY_KEYS` (one a line, `#` comments); the keys of both are accepted.", Summary: "file of Ed25519 public keys accepted (with XLACACHE_VERIFY_KEYS)"},
	{Names: []string{"XLACACHE_ALLOW_SHARED_DIR"}, Default: "`0`", Meaning: "Only with a signing key (HMAC or Ed25519). `1` lets the cache use a directory that another user owns or that others can write; such a directory is otherwise refused (one log line, compiling without a cache). A signing key alone also allows it.", Summary: "use a cache directory others can write (only with a signing key)"},
	{Names: []string{"XLACACHE_METRICS_FILE"}, Default: `unset`, Meaning: "This process's counters in the Prometheus text format (hits, misses, bytes, compile time spent and saved per tier, backend and role; errors by kind), written atomically every minute and when the cache closes, by readers too. Must be outside the cache directory (a path inside it, also through `..` or a symbolic link, is an error); its directory must exist. Made for the node exporter's textfile collector (`*.prom`). See [docs/metrics.md](docs/metrics.md).", Summary: "Prometheus text file for this process's counters (outside the cache directory)"},
	{Names: []string{"XLACACHE_REQUIRE_HIT"}, Default: "`off`", Meaning: "For golden caches that CI fills and other jobs only read. `warn`: every compile the cache could not serve logs one line naming the program and why it missed. `fail`: such a compile is an error naming the program, and the process fails (`run`, `warm`, the GoMLX backend, the PJRT wrapper; under `exec`, JAX and XLA compilations it observes fail the job's report and exit status).", Summary: "off, warn or fail: a compile the cache could not serve is logged or fails"},
	{Names: []string{"XLACACHE_CC"}, Default: "`cc`", Meaning: `The C compiler the cpu backend uses.`, Summary: "the C compiler of the cpu backend"},
	{Names: []string{"XLACACHE_CPU_TUNE"}, Default: "`full`", Meaning: "How much the cpu backend autotunes a cold compile. `full`: every kernel worth tuning (the cache pays for tuning once, on one process of one host), except f32/f64 products of 2^22 multiply-adds or more and 2-D convolutions with a 3x3 window, unit strides and 8 or more input features, which run a gemm and a Winograd convolution built into xlacache. `budget`: the untuned build first, then candidates for kernels in order of estimated benefit until their builds have taken four times as long as it (their timing is bounded by it too); kernels left out keep their default and get no autotune record, so a later `full` compile reuses the records and tunes the rest (a key of its own: it is other code). `off`: none, every kernel in its default configuration, f32/f64 products and convolutions on routines built into xlacache (no C compile for them). Anything else is an error naming the variable. See [docs/cpu.md](docs/cpu.md).", Summary: "full, budget or off: how much the cpu backend autotunes a cold compile"},
	{Names: []string{"XLACACHE_CPU_THREADS"}, Default: "the CPUs in the process's affinity mask (`sched_getaffinity`: `taskset`, cgroup cpusets and Slurm bindings count)", Meaning: "How many threads the cpu backend's kernels run on, 1 to 1024. Big `dot_general`, convolution, elementwise and reduce kernels split their work over this many threads; small ones run on the calling thread. It is part of the autotune and executable keys (the autotuner times the parallel candidates on this many threads). Anything but a whole number from 1 to 1024 is an error naming the variable.", Summary: "threads the cpu backend's kernels run on; default: the CPUs this process may use"},
	{Names: []string{"XLACACHE_XLA_VERSION"}, Default: `unset: jaxlib 0.4.36 assumed`, Meaning: "The jaxlib / PJRT-plugin release of the XLA a Go program loads, such as `0.5.1`. xlacache uses it to decide which XLA flags it may set when it has no plugin file to read.", Summary: "jaxlib / PJRT plugin release of the XLA a Go program loads"},
	{Names: []string{"XLACACHE_XLA_PLUGIN"}, Default: `unset`, Meaning: "A PJRT plugin file to read (not load) to learn which XLA flags it knows. The only way xlacache sets `xla_gpu_experimental_autotuner_cache_dir` (Go programs).", Summary: "PJRT plugin file read to learn which XLA flags it knows"},
	{Names: []string{"XLACACHE_RUNTIME_TAG"}, Default: `unset`, Meaning: "`exec` only: what the job's runtime is beyond what exec can learn itself (jaxlib version, `JAX_PLATFORMS`, the PJRT plugin's hash), such as the device kind and topology (`tpu-v6e-8x8`). Recorded in every pack the job publishes; a fill skips packs whose tag differs (packs without one fill as before). See [docs/multihost.md](docs/multihost.md).", Summary: "exec: device kind/topology recorded in published packs; fills skip other tags"},
	{Names: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}, Default: `AWS S3`, Meaning: "The S3 endpoint, used when the URL has no `?endpoint=`. An `http://` endpoint means plain HTTP.", Summary: ""},
	{Names: []string{"AWS_REGION", "AWS_DEFAULT_REGION"}, Default: `discovered`, Meaning: "The bucket's region, used when the URL has no `?region=`.", Summary: ""},
	{Names: []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}, Default: `then shared files, then IAM`, Meaning: "Credentials. When these are unset: `~/.aws/credentials` and `~/.aws/config` (`AWS_PROFILE`, `AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`), then EC2/ECS/EKS IAM. Credentials in the URL are refused.", Summary: ""},
	{Names: []string{"AWS_CA_BUNDLE"}, Default: `system CAs`, Meaning: `A PEM file of extra trusted CAs.`, Summary: ""},
	{Names: []string{"PJRT_PLUGIN_LIBRARY_PATH"}, Default: `go-xla's default directories`, Meaning: "Where a plugin given by name (`PrepareOptions.PluginName`, `xlacache env --plugin-name`) is looked for.", Summary: ""},
}

// MarkdownTable returns the README's configuration table, made from Docs.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, d := range Docs {
		names := make([]string, len(d.Names))
		for i, n := range d.Names {
			names[i] = "`" + n + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(names, ", "), d.Default, d.Meaning)
	}
	return b.String()
}

// doc returns the row of the variable name.
func doc(name string) Doc {
	for _, d := range Docs {
		if d.Names[0] == name {
			return d
		}
	}
	return Doc{Names: []string{name}}
}

// EnvSettings is what `xlacache env` shows: every XLACACHE_* variable of
// Docs, in its order, with the value in effect and where it came from;
// the options' from o (Settings), the variables read elsewhere from
// lookup (the environment), each with the Summary of its row.
func EnvSettings(o Options, lookup func(string) (string, bool)) []Setting {
	byName := map[string]Setting{}
	for _, s := range o.Settings() {
		byName[s.Name] = s
	}
	defaults := map[string]string{EnvCC: defaultCC, EnvCPUTune: "full", EnvXLAVersion: "", EnvXLAPlugin: "", EnvRuntimeTag: ""}
	var out []Setting
	for _, d := range Docs {
		if d.Summary == "" {
			continue
		}
		name := d.Names[0]
		s, ok := byName[name]
		if !ok {
			s = Setting{Name: name, Value: defaults[name], Source: SourceDefault}
			if v, set := lookup(name); set && strings.TrimSpace(v) != "" {
				s.Value, s.Source = strings.TrimSpace(v), SourceEnv
			}
		}
		s.Help = d.Summary
		out = append(out, s)
	}
	return out
}
