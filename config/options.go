package config

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/sign"
)

// Environment variable names, one per option. They are exported so that
// `xlacache env` and the documentation can name them without retyping.
const (
	EnvDir            = "XLACACHE_DIR"
	EnvEnableXLA      = "XLACACHE_ENABLE_XLA_CACHES"
	EnvMinCompileTime = "XLACACHE_MIN_COMPILE_TIME_SECS"
	EnvMinEntrySize   = "XLACACHE_MIN_ENTRY_SIZE_BYTES"
	EnvMaxSize        = "XLACACHE_MAX_SIZE"
	EnvProcessIndex   = "XLACACHE_PROCESS_INDEX"
	EnvRole           = "XLACACHE_ROLE"
	EnvExplainMisses  = "XLACACHE_EXPLAIN_MISSES"
	EnvDirMode        = "XLACACHE_DIR_MODE"
	EnvFileMode       = "XLACACHE_FILE_MODE"
	EnvWaitSecs       = "XLACACHE_WAIT_SECS"
	EnvSharedURL      = "XLACACHE_SHARED_URL"
	EnvSigningKey     = "XLACACHE_SIGNING_KEY"
	EnvSigningKeyFile = "XLACACHE_SIGNING_KEY_FILE"
	// EnvSigningPrivateKeyFile names a file holding an Ed25519 private
	// key: the process signs what it stores (a CI writer).
	EnvSigningPrivateKeyFile = "XLACACHE_SIGNING_PRIVATE_KEY_FILE"
	// EnvVerifyKeys lists the Ed25519 public keys whose signatures are
	// accepted (comma or white space separated, base64, hex or PEM).
	EnvVerifyKeys = "XLACACHE_VERIFY_KEYS"
	// EnvVerifyKeysFile names a file of such public keys, one a line.
	EnvVerifyKeysFile = "XLACACHE_VERIFY_KEYS_FILE"
	EnvLeaseStale     = "XLACACHE_LEASE_STALE_SECS"
	EnvLeasePIDCheck  = "XLACACHE_LEASE_PID_CHECK"
	// EnvAllowSharedDir lets the cache use a directory another user owns
	// or others can write; only safe with a signing key.
	EnvAllowSharedDir = "XLACACHE_ALLOW_SHARED_DIR"
	// EnvSharedMaxObjectSize bounds the size of a shared-tier object that
	// is read; larger ones are misses.
	EnvSharedMaxObjectSize = "XLACACHE_SHARED_MAX_OBJECT_SIZE"
	// EnvCPUThreads bounds the threads the cpu backend's kernels run on.
	EnvCPUThreads = "XLACACHE_CPU_THREADS"
	// EnvMetricsFile names the Prometheus text file a process writes its
	// counters to (outside the cache directory).
	EnvMetricsFile = "XLACACHE_METRICS_FILE"
	// EnvRequireHit makes a compile that the cache could not serve a
	// warning or an error (golden caches: a warm job must not recompile).
	EnvRequireHit = "XLACACHE_REQUIRE_HIT"
)

// RankVars are the launcher rank variables consulted, in this order, when
// XLACACHE_PROCESS_INDEX is unset: Open MPI, MPICH/Intel MPI (PMI), Slurm,
// and torchrun / torch.distributed. The first one set wins.
var RankVars = []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}

// Default values, shared by Defaults and the documentation.
const (
	DefaultMinCompileTime = time.Second
	DefaultWaitTimeout    = 120 * time.Second
	DefaultDirMode        = os.FileMode(0o700)
	DefaultFileMode       = os.FileMode(0o600)
	// DefaultLeaseStale is the single-flight lease's heartbeat timeout
	// when LeaseStale is zero.
	DefaultLeaseStale = 30 * time.Second
	// MaxLeaseStale bounds LeaseStale: a longer silence is no heartbeat.
	MaxLeaseStale = 24 * time.Hour
)

// allEnvVars lists every option variable, in the order `xlacache env` shows
// them.
var allEnvVars = []string{
	EnvDir, EnvEnableXLA, EnvMinCompileTime, EnvMinEntrySize, EnvMaxSize,
	EnvProcessIndex, EnvRole, EnvExplainMisses, EnvDirMode, EnvFileMode,
	EnvWaitSecs, EnvLeaseStale, EnvLeasePIDCheck, EnvSharedURL, EnvSigningKey, EnvSigningKeyFile,
	EnvSigningPrivateKeyFile, EnvVerifyKeys, EnvVerifyKeysFile,
	EnvAllowSharedDir, EnvSharedMaxObjectSize, EnvCPUThreads, EnvMetricsFile, EnvRequireHit,
}

// Defaults returns the options used when nothing is configured: caching off
// (no directory), JAX's thresholds, the autotune subcache only, owner-only
// permissions.
func Defaults() Options {
	o := Options{
		Subcaches:      []Subcache{SubcacheAutotune},
		MinCompileTime: DefaultMinCompileTime,
		MinEntrySize:   0,
		MaxSize:        0,
		Role:           RoleAuto,
		DirMode:        DefaultDirMode,
		FileMode:       DefaultFileMode,
		WaitTimeout:    DefaultWaitTimeout,
		Sources:        make(map[string]Source, len(allEnvVars)),
	}
	for _, name := range allEnvVars {
		o.Sources[name] = SourceDefault
	}
	return o
}

// FromEnv builds Options from Defaults and the XLACACHE_* variables that
// lookup reports (pass os.LookupEnv). Every bad value is reported, each
// error naming the variable and the value; the returned Options are then
// the zero value.
func FromEnv(lookup func(string) (string, bool)) (Options, error) {
	o := Defaults()
	var errs []error
	get := func(name string) (string, bool) {
		v, ok := lookup(name)
		if !ok {
			return "", false
		}
		v = strings.TrimSpace(v)
		if v == "" {
			// An empty variable means "unset": shells make it easy to
			// export FOO= by accident, and an empty dir must mean off.
			return "", false
		}
		o.Sources[name] = SourceEnv
		return v, true
	}
	bad := func(name, value string, err error) {
		// A URL's credentials are not echoed back.
		errs = append(errs, fmt.Errorf("%s=%q: %w", name, RedactURL(value), err))
	}

	if v, ok := get(EnvDir); ok {
		o.Dir = v
	}
	o.SubcachesExplicit = parseVar(get, bad, EnvEnableXLA, ParseSubcaches, &o.Subcaches)
	parseVar(get, bad, EnvMinCompileTime, ParseSeconds, &o.MinCompileTime)
	parseVar(get, bad, EnvMinEntrySize, ParseSize, &o.MinEntrySize)
	parseVar(get, bad, EnvMaxSize, parseMaxSize, &o.MaxSize)
	parseVar(get, bad, EnvSharedMaxObjectSize, parseObjectSize, &o.SharedMaxObjectSize)
	parseVar(get, bad, EnvCPUThreads, ParseCPUThreads, &o.CPUThreads)
	for _, name := range []string{EnvMaxSize, EnvMinEntrySize, EnvSharedMaxObjectSize} {
		if v, ok := get(name); ok && IsBinarySize(v) {
			o.BinarySizes = true
		}
	}
	if !parseVar(get, bad, EnvProcessIndex, parseIndex, &o.ProcessIndex) {
		for _, rv := range RankVars {
			raw, ok := lookup(rv)
			if !ok || strings.TrimSpace(raw) == "" {
				continue
			}
			n, err := parseIndex(strings.TrimSpace(raw))
			if err != nil {
				bad(rv, raw, fmt.Errorf("launcher rank variable used as %s: %w", EnvProcessIndex, err))
				break
			}
			o.ProcessIndex = n
			o.Sources[EnvProcessIndex] = Source(string(SourceEnv) + ":" + rv)
			break
		}
	}
	parseVar(get, bad, EnvRole, ParseRole, &o.Role)
	parseVar(get, bad, EnvExplainMisses, parseBool, &o.ExplainMisses)
	parseVar(get, bad, EnvDirMode, ParseMode, &o.DirMode)
	parseVar(get, bad, EnvFileMode, ParseMode, &o.FileMode)
	parseVar(get, bad, EnvWaitSecs, ParseSeconds, &o.WaitTimeout)
	parseVar(get, bad, EnvLeaseStale, parseLeaseStale, &o.LeaseStale)
	pidCheck := !o.LeaseNoPIDCheck
	parseVar(get, bad, EnvLeasePIDCheck, parseBool, &pidCheck)
	o.LeaseNoPIDCheck = !pidCheck
	parseVar(get, bad, EnvAllowSharedDir, parseBool, &o.AllowSharedDir)
	parseVar(get, bad, EnvRequireHit, ParseRequireHit, &o.RequireHit)
	if v, ok := get(EnvSharedURL); ok {
		o.SharedURL = v
	}
	if v, ok := get(EnvMetricsFile); ok {
		o.MetricsFile = v
	}
	// An empty variable means unset, as for every option; but a key of only
	// white space is an error, not a silent switch to unsigned entries
	// (readers would then accept unsigned native code).
	keyVal, keySet := lookup(EnvSigningKey)
	if keySet && keyVal == "" {
		keySet = false
	} else if keySet {
		o.Sources[EnvSigningKey] = SourceEnv
	}
	keyFile, fileSet := get(EnvSigningKeyFile)
	var hmacKey []byte
	switch {
	case keySet && fileSet:
		errs = append(errs, fmt.Errorf("%s and %s are both set: choose one", EnvSigningKey, EnvSigningKeyFile))
	case keySet:
		// An empty key would silently turn signing off, and readers would
		// then load unsigned native code: refuse it.
		if strings.TrimSpace(keyVal) == "" {
			bad(EnvSigningKey, keyVal, errors.New("the signing key is empty; unset the variable to run unsigned"))
		} else {
			hmacKey = []byte(keyVal)
		}
	case fileSet:
		b, err := os.ReadFile(keyFile)
		switch {
		case err != nil:
			bad(EnvSigningKeyFile, keyFile, fmt.Errorf("reading signing key: %w", err))
		case strings.TrimSpace(string(b)) == "":
			bad(EnvSigningKeyFile, keyFile, errors.New("the signing key file is empty; unset the variable to run unsigned"))
		default:
			// A trailing newline from `echo key > file` is not part of the key.
			hmacKey = []byte(strings.TrimRight(string(b), "\r\n"))
		}
	}
	o.SigningKey = sign.NewHMAC(hmacKey)
	if ed, edVars := ed25519FromEnv(get, bad); len(edVars) > 0 {
		if hmacVar := EnvSigningKey; keySet || fileSet {
			if !keySet {
				hmacVar = EnvSigningKeyFile
			}
			errs = append(errs, fmt.Errorf("%s and %s are both set: choose HMAC or Ed25519 signing, not both",
				hmacVar, strings.Join(edVars, ", ")))
		} else {
			o.SigningKey = ed
		}
	}
	if len(errs) == 0 {
		if err := o.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Options{}, errors.Join(errs...)
	}
	return o, nil
}

// parseVar parses the variable name (as get returns it) with parse into
// dst, and reports whether the variable was set. A value parse rejects is
// reported through bad and leaves dst alone.
func parseVar[T any](get func(string) (string, bool), bad func(name, value string, err error),
	name string, parse func(string) (T, error), dst *T) bool {
	v, ok := get(name)
	if !ok {
		return false
	}
	x, err := parse(v)
	if err != nil {
		bad(name, v, err)
		return true
	}
	*dst = x
	return true
}

// parseLeaseStale parses an XLACACHE_LEASE_STALE_SECS value: seconds, more
// than 0 and at most MaxLeaseStale.
func parseLeaseStale(s string) (time.Duration, error) {
	d, err := ParseSeconds(s)
	if err != nil {
		return 0, err
	}
	if d <= 0 || d > MaxLeaseStale {
		return 0, fmt.Errorf("want more than 0 and at most %v", MaxLeaseStale)
	}
	return d, nil
}

// ParseSubcaches parses an XLACACHE_ENABLE_XLA_CACHES value: "all", "none",
// or a comma-separated list of subcache names or aliases ("autotune",
// "kernels"). Names must match exactly (after trimming spaces and ignoring
// case); an unknown name is an error naming it.
func ParseSubcaches(s string) ([]Subcache, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "all":
		return []Subcache{SubcacheAutotune, SubcacheKernels}, nil
	case "none":
		return []Subcache{}, nil
	case "":
		return nil, errors.New(`empty subcache list (use "none" to turn subcaches off)`)
	}
	var out []Subcache
	seen := map[Subcache]bool{}
	for _, raw := range strings.Split(t, ",") {
		name := strings.TrimSpace(raw)
		var sc Subcache
		switch name {
		case string(SubcacheAutotune), SubcacheAutotune.Alias():
			sc = SubcacheAutotune
		case string(SubcacheKernels), SubcacheKernels.Alias():
			sc = SubcacheKernels
		case "all", "none":
			return nil, fmt.Errorf("%q cannot be combined with other subcache names", name)
		case "":
			return nil, fmt.Errorf("empty name in subcache list %q", s)
		default:
			return nil, fmt.Errorf("unknown subcache %q (known: %s, %s, %s, %s, all, none)",
				name, SubcacheAutotune.Alias(), SubcacheKernels.Alias(), SubcacheAutotune, SubcacheKernels)
		}
		if !seen[sc] {
			seen[sc] = true
			out = append(out, sc)
		}
	}
	return out, nil
}

// Alias returns the short name of a subcache ("autotune", "kernels"), or
// the full name for an unknown subcache.
func (s Subcache) Alias() string {
	switch s {
	case SubcacheAutotune:
		return "autotune"
	case SubcacheKernels:
		return "kernels"
	}
	return string(s)
}

// AllSubcaches lists every known subcache, in a stable order.
func AllSubcaches() []Subcache { return []Subcache{SubcacheAutotune, SubcacheKernels} }

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20,
	"gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a byte count: a plain number of bytes ("1048576") or a
// number with a unit, decimal (KB, MB, GB, TB) or binary (KiB, MiB, GiB,
// TiB), case-insensitive, optionally fractional ("1.5GiB"). Negative or
// overflowing sizes are errors.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty size")
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		if strings.HasPrefix(t, "-") {
			return 0, fmt.Errorf("size %q is negative", s)
		}
		return 0, fmt.Errorf("size %q does not start with a number", s)
	}
	mult, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q has unknown unit %q (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q is not a valid number: %w", s, err)
		}
		if mult == 1 {
			return n, nil
		}
		if n > math.MaxInt64/int64(mult) {
			return 0, fmt.Errorf("size %q overflows 64 bits", s)
		}
		return n * int64(mult), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q is not a valid number: %w", s, err)
	}
	v := f * mult
	if v >= math.MaxInt64 || math.IsNaN(v) {
		return 0, fmt.Errorf("size %q overflows 64 bits", s)
	}
	return int64(v), nil
}

// parseMaxSize accepts what ParseSize accepts plus JAX's "-1" (and any
// negative integer) meaning unbounded.
func parseMaxSize(s string) (int64, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n < 0 {
		return 0, nil
	}
	return ParseSize(s)
}

// ParseSeconds parses a non-negative number of seconds such as "1", "0.5"
// or "120"; a Go duration such as "1m30s" is accepted too.
func ParseSeconds(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		d, derr := time.ParseDuration(t)
		if derr != nil {
			return 0, fmt.Errorf("%q is not a number of seconds", s)
		}
		if d < 0 {
			return 0, fmt.Errorf("%q is negative", s)
		}
		return d, nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number of seconds", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	if f > float64(math.MaxInt64)/float64(time.Second) {
		return 0, fmt.Errorf("%q seconds is too large", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// ParseRole parses "auto", "writer" or "reader" (case-insensitive).
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return RoleAuto, nil
	case "writer", "write", "w":
		return RoleWriter, nil
	case "reader", "read", "r":
		return RoleReader, nil
	}
	return RoleAuto, fmt.Errorf("unknown role %q (use auto, writer or reader)", s)
}

// String returns the role's name as XLACACHE_ROLE spells it.
func (r Role) String() string {
	switch r {
	case RoleAuto:
		return "auto"
	case RoleWriter:
		return "writer"
	case RoleReader:
		return "reader"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// RequireHit says what a compile that the cache could not serve is
// (XLACACHE_REQUIRE_HIT): nothing (RequireHitOff), one log line naming the
// program and why it missed (RequireHitWarn), or an error that fails the
// compile, and with it the process (RequireHitFail). It is for golden
// caches that CI fills and evaluation jobs, benchmarks and developers only
// read: a warm job that silently recompiles is the bug they want caught.
type RequireHit int

// The XLACACHE_REQUIRE_HIT values.
const (
	RequireHitOff RequireHit = iota
	RequireHitWarn
	RequireHitFail
)

// ParseRequireHit parses an XLACACHE_REQUIRE_HIT value: off (also 0, no,
// false), warn, or fail. Case-insensitive.
func ParseRequireHit(s string) (RequireHit, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "0", "no", "false", "":
		return RequireHitOff, nil
	case "warn":
		return RequireHitWarn, nil
	case "fail":
		return RequireHitFail, nil
	}
	return RequireHitOff, fmt.Errorf("unknown value %q (use off, warn or fail)", s)
}

// String returns the value as XLACACHE_REQUIRE_HIT spells it.
func (r RequireHit) String() string {
	switch r {
	case RequireHitOff:
		return "off"
	case RequireHitWarn:
		return "warn"
	case RequireHitFail:
		return "fail"
	}
	return fmt.Sprintf("RequireHit(%d)", int(r))
}

// ParseMode parses a permission mode in octal ("0700", "750", "0o640").
// Only permission bits are allowed.
func ParseMode(s string) (os.FileMode, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0o"), "0O")
	if t == "" {
		return 0, fmt.Errorf("empty mode %q", s)
	}
	n, err := strconv.ParseUint(t, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("mode %q is not an octal number like 0700", s)
	}
	if n&^0o777 != 0 {
		return 0, fmt.Errorf("mode %q has bits beyond 0777", s)
	}
	return os.FileMode(n), nil
}

func parseIndex(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a process index (a non-negative integer)", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("process index %q is negative", s)
	}
	return int(n), nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on", "t", "y":
		return true, nil
	case "0", "false", "no", "off", "f", "n":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use 1/0, true/false, yes/no, on/off)", s)
}

// Validate reports every invalid field, naming the field and its value.
func (o Options) Validate() error {
	var errs []error
	if strings.ContainsRune(o.Dir, 0) {
		errs = append(errs, fmt.Errorf("Dir %q contains a NUL byte", o.Dir))
	}
	for _, s := range o.Subcaches {
		if s != SubcacheAutotune && s != SubcacheKernels {
			errs = append(errs, fmt.Errorf("Subcaches: unknown subcache %q", s))
		}
	}
	if o.MinCompileTime < 0 {
		errs = append(errs, fmt.Errorf("MinCompileTime %v is negative", o.MinCompileTime))
	}
	if o.MinEntrySize < 0 {
		errs = append(errs, fmt.Errorf("MinEntrySize %d is negative", o.MinEntrySize))
	}
	if o.SharedMaxObjectSize < 0 {
		errs = append(errs, fmt.Errorf("SharedMaxObjectSize %d is negative", o.SharedMaxObjectSize))
	}
	if o.CPUThreads < 0 || o.CPUThreads > MaxCPUThreads {
		errs = append(errs, fmt.Errorf("CPUThreads %d is outside 0..%d", o.CPUThreads, MaxCPUThreads))
	}
	if o.ProcessIndex < 0 {
		errs = append(errs, fmt.Errorf("ProcessIndex %d is negative", o.ProcessIndex))
	}
	if o.Role != RoleAuto && o.Role != RoleWriter && o.Role != RoleReader {
		errs = append(errs, fmt.Errorf("Role %d is not auto, writer or reader", int(o.Role)))
	}
	if o.DirMode&^0o777 != 0 {
		errs = append(errs, fmt.Errorf("DirMode %#o has bits beyond 0777", uint32(o.DirMode)))
	} else if o.DirMode != 0 && o.DirMode&0o700 != 0o700 {
		errs = append(errs, fmt.Errorf("DirMode %#o must give the owner rwx (0700)", uint32(o.DirMode)))
	}
	if o.FileMode&^0o777 != 0 {
		errs = append(errs, fmt.Errorf("FileMode %#o has bits beyond 0777", uint32(o.FileMode)))
	} else if o.FileMode != 0 && o.FileMode&0o600 != 0o600 {
		errs = append(errs, fmt.Errorf("FileMode %#o must give the owner rw (0600)", uint32(o.FileMode)))
	}
	if o.WaitTimeout < 0 {
		errs = append(errs, fmt.Errorf("WaitTimeout %v is negative", o.WaitTimeout))
	}
	if o.LeaseStale < 0 || o.LeaseStale > MaxLeaseStale {
		errs = append(errs, fmt.Errorf("LeaseStale %v is not between 0 (the default) and %v", o.LeaseStale, MaxLeaseStale))
	}
	if err := checkMetricsFile(o.MetricsFile, o.Dir); err != nil {
		errs = append(errs, err)
	}
	if o.SharedURL != "" && !strings.HasPrefix(o.SharedURL, "s3://") && !strings.HasPrefix(o.SharedURL, "gs://") {
		errs = append(errs, fmt.Errorf("SharedURL %q is not an s3:// or gs:// URL such as s3://bucket/prefix (the shared stores supported)", RedactURL(o.SharedURL)))
	}
	return errors.Join(errs...)
}

// EffectiveLeaseStale is LeaseStale, or DefaultLeaseStale when zero.
func (o Options) EffectiveLeaseStale() time.Duration {
	if o.LeaseStale <= 0 {
		return DefaultLeaseStale
	}
	return o.LeaseStale
}

// Enabled reports whether caching is on (a directory is set).
func (o Options) Enabled() bool { return o.Dir != "" }

// Writer reports whether this process may write to the cache: an explicit
// writer, or process index 0 under RoleAuto; never a process whose keys
// can verify but not sign (VerifyOnly), whatever its role.
func (o Options) Writer() bool {
	if o.VerifyOnly() {
		return false
	}
	switch o.Role {
	case RoleWriter:
		return true
	case RoleAuto:
		return o.ProcessIndex == 0
	}
	return false
}

// VerifyOnly reports whether the process holds keys that verify but
// cannot sign (Ed25519 public keys without the private key): it is then a
// reader of the signed cache, since whatever it wrote would be unsigned,
// and refused by itself and every other process with keys.
func (o Options) VerifyOnly() bool { return o.SigningKey.Enabled() && !o.SigningKey.CanSign() }

// HasSubcache reports whether subcache s is turned on.
func (o Options) HasSubcache(s Subcache) bool {
	for _, x := range o.Subcaches {
		if x == s {
			return true
		}
	}
	return false
}

// EffectiveDirMode returns DirMode, or 0700 when it is zero (an Options
// built by hand rather than from Defaults).
func (o Options) EffectiveDirMode() os.FileMode {
	if o.DirMode == 0 {
		return DefaultDirMode
	}
	return o.DirMode
}

// EffectiveFileMode returns FileMode, or 0600 when it is zero.
func (o Options) EffectiveFileMode() os.FileMode {
	if o.FileMode == 0 {
		return DefaultFileMode
	}
	return o.FileMode
}

// Setting is one option as `xlacache env` shows it.
type Setting struct {
	// Name is the environment variable.
	Name string `json:"name"`
	// Value is the value in effect, formatted as the variable would take
	// it. Secrets are redacted.
	Value string `json:"value"`
	// Source says where the value came from (default, env, code, or
	// "env:<RANKVAR>" for a process index taken from a launcher).
	Source Source `json:"source"`
	// Help is a one-line description.
	Help string `json:"help"`
}

// Settings lists every option with its value and where it came from, in a
// stable order. Fields with no recorded source are reported as SourceCode
// when they differ from the default, else SourceDefault.
func (o Options) Settings() []Setting {
	def := Defaults()
	src := func(name string, differs bool) Source {
		if s, ok := o.Sources[name]; ok && s != SourceDefault {
			return s
		}
		if differs {
			return SourceCode
		}
		return SourceDefault
	}
	subNames := make([]string, 0, len(o.Subcaches))
	for _, s := range o.Subcaches {
		subNames = append(subNames, string(s))
	}
	subVal := strings.Join(subNames, ",")
	if len(o.Subcaches) == 0 {
		subVal = "none"
	}
	if !o.SubcachesExplicit && sameSubcaches(o.Subcaches, def.Subcaches) {
		// The default a backend really uses: the cpu backend (xlacache
		// run, warm, demo) widens it to all subcaches, its kernels being
		// named by their content (cache.Session).
		subVal = "all (cpu backend; " + subVal + " on the xla backend)"
	}
	maxVal := "unbounded"
	if o.MaxSize > 0 {
		maxVal = strconv.FormatInt(o.MaxSize, 10)
	}
	keyVal := ""
	hmacSet := o.SigningKey.Scheme() == sign.HMAC
	if hmacSet {
		keyVal = "<set, " + o.SigningKey.String() + ">"
	}
	subDiff := !sameSubcaches(o.Subcaches, def.Subcaches)
	keySrc := src(EnvSigningKey, hmacSet)
	if s, ok := o.Sources[EnvSigningKeyFile]; ok && s != SourceDefault {
		keySrc = s
	}
	// Ed25519: key ids only (public); the private key file's path is
	// shown by its own row.
	privVal, verifyVal := "", ""
	if id, ok := o.SigningKey.SignerID(); ok {
		privVal = "<set, key id " + id.String() + ">"
	}
	if ids := o.SigningKey.VerifyIDs(); len(ids) > 0 {
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = id.String()
		}
		verifyVal = "key ids " + strings.Join(names, ",")
		if !o.SigningKey.CanSign() {
			verifyVal += " (verify-only: a reader of the signed tiers)"
		}
	}
	verifySrc := src(EnvVerifyKeys, verifyVal != "")
	for _, name := range []string{EnvVerifyKeysFile, EnvSigningPrivateKeyFile} {
		// Keys from the file, or the private key's own public key alone,
		// come from those variables.
		if s, ok := o.Sources[name]; ok && s != SourceDefault && (verifySrc == SourceDefault || verifySrc == SourceCode) {
			verifySrc = s
		}
	}
	return []Setting{
		{EnvDir, o.Dir, src(EnvDir, o.Dir != ""), "cache directory; empty turns caching off"},
		{EnvEnableXLA, subVal, src(EnvEnableXLA, subDiff), "compiler subcaches: all, none, or a list of autotune, kernels"},
		{EnvMinCompileTime, strconv.FormatFloat(o.MinCompileTime.Seconds(), 'g', -1, 64), src(EnvMinCompileTime, o.MinCompileTime != def.MinCompileTime), "compilations faster than this (seconds) are not stored"},
		{EnvMinEntrySize, strconv.FormatInt(o.MinEntrySize, 10), src(EnvMinEntrySize, o.MinEntrySize != 0), "executables smaller than this (bytes) are not stored"},
		{EnvMaxSize, maxVal, src(EnvMaxSize, o.MaxSize > 0), "bound on all tiers together, LRU eviction (bytes or 10GiB, 500MB)"},
		{EnvProcessIndex, strconv.Itoa(o.ProcessIndex), src(EnvProcessIndex, o.ProcessIndex != 0), "process index; falls back to " + strings.Join(RankVars, ", ")},
		{EnvRole, o.Role.String() + roleNote(o), src(EnvRole, o.Role != RoleAuto), "auto (index 0 writes), writer, or reader"},
		{EnvExplainMisses, strconv.FormatBool(o.ExplainMisses), src(EnvExplainMisses, o.ExplainMisses), "log which key component differs on a miss"},
		{EnvDirMode, fmt.Sprintf("%04o", uint32(o.EffectiveDirMode())), src(EnvDirMode, o.EffectiveDirMode() != def.DirMode), "permissions of created directories"},
		{EnvFileMode, fmt.Sprintf("%04o", uint32(o.EffectiveFileMode())), src(EnvFileMode, o.EffectiveFileMode() != def.FileMode), "permissions of created files"},
		{EnvWaitSecs, strconv.FormatFloat(o.WaitTimeout.Seconds(), 'g', -1, 64), src(EnvWaitSecs, o.WaitTimeout != def.WaitTimeout), "how long to wait for another process compiling the same program"},
		{EnvLeaseStale, strconv.FormatFloat(o.EffectiveLeaseStale().Seconds(), 'g', -1, 64), src(EnvLeaseStale, o.LeaseStale != 0), "silence (seconds) after which a compiling process's lease is taken over"},
		{EnvLeasePIDCheck, strconv.FormatBool(!o.LeaseNoPIDCheck), src(EnvLeasePIDCheck, o.LeaseNoPIDCheck), "a same-host lease holder whose pid is gone is dead at once"},
		{EnvSharedURL, RedactURL(o.SharedURL), src(EnvSharedURL, o.SharedURL != ""), "shared object-store tier, s3://bucket/prefix or gs://bucket/prefix"},
		{EnvSharedMaxObjectSize, strconv.FormatInt(o.EffectiveSharedMaxObjectSize(), 10), src(EnvSharedMaxObjectSize, o.SharedMaxObjectSize > 0), "largest shared-tier object read, in bytes; never more than half the memory available"},
		{EnvSigningKey, keyVal, keySrc, "HMAC key: sign entries, refuse unsigned or forged ones (or use " + EnvSigningKeyFile + ")"},
		{EnvSigningPrivateKeyFile, privVal, src(EnvSigningPrivateKeyFile, privVal != ""), "Ed25519 private key file: this process signs what it stores"},
		{EnvVerifyKeys, verifyVal, verifySrc, "Ed25519 public keys accepted (key ids shown); alone they make a verify-only reader"},
		{EnvAllowSharedDir, strconv.FormatBool(o.AllowSharedDir), src(EnvAllowSharedDir, o.AllowSharedDir), "use a cache directory others can write (only with " + EnvSigningKey + ")"},
		{EnvCPUThreads, strconv.Itoa(o.EffectiveCPUThreads()), src(EnvCPUThreads, o.CPUThreads > 0), "threads the cpu backend's kernels run on; default: the CPUs this process may use"},
		{EnvMetricsFile, o.MetricsFile, src(EnvMetricsFile, o.MetricsFile != ""), "Prometheus text file for this process's counters (outside the cache directory)"},
		{EnvRequireHit, o.RequireHit.String(), src(EnvRequireHit, o.RequireHit != RequireHitOff), "off, warn or fail: a compile the cache could not serve is logged or fails"},
	}
}

func roleNote(o Options) string {
	if o.Writer() {
		return " (writes)"
	}
	if o.VerifyOnly() {
		return " (reads only: verify-only keys)"
	}
	return " (reads only)"
}

func sameSubcaches(a, b []Subcache) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]Subcache(nil), a...)
	y := append([]Subcache(nil), b...)
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// SourceFlag marks a value given on a command line (the CLI's --dir).
const SourceFlag Source = "flag"

// ed25519FromEnv reads the Ed25519 variables: the private key file (a
// writer) and the public keys (XLACACHE_VERIFY_KEYS and the file
// XLACACHE_VERIFY_KEYS_FILE, together: a rotation lists the old and the
// new key). It returns the keys (nil when none is set or one is bad: bad
// has then been told, naming the variable) and the names of the variables
// that were set.
func ed25519FromEnv(get func(string) (string, bool), bad func(name, value string, err error)) (*sign.Keys, []string) {
	var set []string
	var priv ed25519.PrivateKey
	var pubs []ed25519.PublicKey
	ok := true
	if path, isSet := get(EnvSigningPrivateKeyFile); isSet {
		set = append(set, EnvSigningPrivateKeyFile)
		b, err := readKeyFile(path)
		if err == nil {
			priv, err = sign.ParsePrivateKey(b)
		}
		if err != nil {
			bad(EnvSigningPrivateKeyFile, path, fmt.Errorf("Ed25519 private key: %w", err))
			ok = false
		}
	}
	if v, isSet := get(EnvVerifyKeys); isSet {
		set = append(set, EnvVerifyKeys)
		keys, err := sign.ParsePublicKeys(v)
		if err != nil {
			bad(EnvVerifyKeys, v, fmt.Errorf("Ed25519 public keys: %w", err))
			ok = false
		}
		pubs = append(pubs, keys...)
	}
	if path, isSet := get(EnvVerifyKeysFile); isSet {
		set = append(set, EnvVerifyKeysFile)
		b, err := readKeyFile(path)
		var keys []ed25519.PublicKey
		if err == nil {
			keys, err = sign.ParsePublicKeys(string(b))
		}
		if err != nil {
			bad(EnvVerifyKeysFile, path, fmt.Errorf("Ed25519 public keys: %w", err))
			ok = false
		}
		pubs = append(pubs, keys...)
	}
	if !ok || len(set) == 0 {
		return nil, set
	}
	k, err := sign.NewEd25519(priv, pubs...)
	if err != nil {
		bad(set[0], "", err)
		return nil, set
	}
	return k, set
}

// readKeyFile reads a key file, refusing one too large to be a key.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 64<<10+1)
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if n > 64<<10 {
		return nil, errors.New("larger than 64 KiB: not a key file")
	}
	return b[:n], nil
}
