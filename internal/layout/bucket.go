package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Names in the shared store (the bucket, below its configured prefix).
//
// Every top-level namespace in use today, each with its one definition
// below (bucket_test.go pins every format with literal names):
//
//	executables/<key>                   entries of the executables tier (ObjectName, ParseEntryObject)
//	<backend>/<subcache>/<key>          entries of a backend's tier (ObjectName, ParseEntryObject)
//	lease.<tier>.<key>                  single-flight leases (LeaseObject)
//	lease-probe.<token>[-missing]       scratch objects of the conditional-write probe (ProbeObject)
//	used/<tier>/<key>                   usage markers (UsedMarker, MarkedObject)
//	hostfill/v1/<id>.pack, .index       exec's packs and their indexes (PackObjects, ParsePackObject)
//	xla_gpu_per_fusion_autotune_cache_dir/<file>
//	                                    XLA's autotune results, mirrored (XLAAutotuneObject)
//	xla_gpu_kernel_cache_file.parts/<sha256>
//	                                    XLA's kernel-cache parts, mirrored (XLAKernelPartObject)
//	leases/...                          single-flight leases of versions before issue 20 (ignored)
//
// The rule every name obeys: no object's name is a path prefix of another
// object's ("a/b" beside "a/b/c"). Filesystem-backed S3 servers
// (versitygw's posix backend, and others like it) keep "a/b/c" as a file
// in a directory a/b, so they cannot hold both.
//
// The leases and the probe's objects are flat: they sit directly below the
// store's root, in no directory of their own. Such a server creates an
// object's directories when it is put and removes every directory a
// delete leaves empty; a put whose directory a concurrent delete removes
// between the server's mkdir and its link of the new file fails with 409
// "Existing Object is a directory" (versity/versitygw#1988). Leases and
// probe objects are created and deleted all the time by many hosts, and
// under a shared "leases/<tier>/" directory the last release in it removed
// the directory while another host was creating its lease there: its claim
// failed and both hosts compiled. Flat names leave no directory of their
// own to remove; the store's root is removed only when the whole prefix
// is empty (before the first entry is published), and internal/s3blob
// retries a write that lost that race.
//
// Old versions' lease objects ("leases/<tier>/<key>", "leases/probe/...")
// are neither read nor written by this version: leases live for one
// compile, so a host of an old version and one of this version at once
// cost at most a duplicate compile, never a wrong result, and lease
// objects a dead old host left behind are never looked at (a bucket
// lifecycle rule on "leases/" removes them).

// The names that do live in directories of their own (entries, usage
// markers, packs, XLA's files) meet the same race whenever a delete
// empties their directory while a put creates in it: bucket retention
// deletes entries and usage markers ("used/<tier>/") while writers publish
// entries and PutIfAbsent or ReplaceIfMatch markers there, and hostfill's
// prune deletes packs while hosts publish new ones. internal/s3blob's retry
// covers every put (PutIfAbsent and ReplaceIfMatch both go through its
// putObject), so a lost race costs a few milliseconds; where the retries
// run out, a marker's refresh is lost (logged once, the entry may be
// taken for older than it is) or a publish fails (the next miss publishes
// again), never a wrong result. A ReplaceIfMatch of a marker keeps its
// own directory non-empty, so only a marker's first write races. No name
// here is a path prefix of another: keys, tokens, pack ids and XLA's file
// names have no slash, tier names have no dot, and "used", "leases",
// "hostfill" and XLA's names are reserved as backend names
// (ValidTierName).

// LeasePrefix starts the name of every lease object. A bucket lifecycle
// rule may expire objects with this prefix after a day, to clean up after
// hosts that died holding a lease.
const LeasePrefix = "lease."

// ProbePrefix starts the names of the probe's scratch objects (see
// internal/blobflight.Probe): one object per probe, named by a random
// token, and a name next to it that must stay absent.
const ProbePrefix = "lease-probe."

// OldLeasePrefix is where versions before issue 20 kept lease and probe
// objects ("leases/<tier>/<key>", "leases/probe/<token>"). Nothing reads
// or writes there any more; the name stays reserved so that no tier takes
// it.
const OldLeasePrefix = "leases/"

// LeaseObject returns the lease object of the entry object name (see
// ObjectName): "<tier>/<key>" becomes "lease.<tier>.<key>" with the
// tier's slash a dot. Tier names have no dots and keys no slashes, so
// distinct entries of valid tiers get distinct leases; two other names
// that flatten alike only share a lease (one waits for the other), which
// costs a wait, never a wrong result.
func LeaseObject(name string) string {
	return LeasePrefix + strings.ReplaceAll(name, "/", ".")
}

// ProbeObject returns the probe's scratch object named by token, and the
// name beside it that the probe checks stays absent.
func ProbeObject(token string) (obj, missing string) {
	return ProbePrefix + token, ProbePrefix + token + "-missing"
}

// IsLeaseObject reports whether the store's object name is a lease or
// probe object of this version or an older one: single-flight state,
// never an entry.
func IsLeaseObject(name string) bool {
	return strings.HasPrefix(name, LeasePrefix) || strings.HasPrefix(name, ProbePrefix) || strings.HasPrefix(name, OldLeasePrefix)
}

// UsedPrefix starts the names of the usage markers in the shared store: a
// writer that hits the shared object "<tier>/<key>" refreshes the marker
// "used/<tier>/<key>" at most once a day, and bucket retention (package
// retention) takes an object's last use from the later of the two
// objects' modification times. "used" is reserved as a backend name, so
// no entry's object name starts with it.
const UsedPrefix = "used/"

// UsedMarker returns the usage marker's name for the shared object name.
func UsedMarker(name string) string { return UsedPrefix + name }

// MarkedObject returns the entry object whose usage marker is marker, and
// false when marker is not the marker of an entry object.
func MarkedObject(marker string) (obj string, ok bool) {
	obj, ok = strings.CutPrefix(marker, UsedPrefix)
	return obj, ok && IsEntryObject(obj)
}

// ParseEntryObject splits the store's object name of an xlacache entry
// (ObjectName: "executables/<key>", "<backend>/<subcache>/<key>") into its
// tier and key; ok is false for any other name (a usage marker, a lease, a
// pack, XLA's files, a key of the wrong shape).
func ParseEntryObject(name string) (tier, key string, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 || strings.HasPrefix(name, UsedPrefix) {
		return "", "", false
	}
	tier, key = name[:i], name[i+1:]
	if ValidTierName(tier) != nil || !ValidKey(key) {
		return "", "", false
	}
	return tier, key, true
}

// IsEntryObject reports whether name is an xlacache entry's object (see
// ParseEntryObject): what bucket retention and sync cover.
func IsEntryObject(name string) bool {
	_, _, ok := ParseEntryObject(name)
	return ok
}

// maxModuleLen is cache.MaxModuleLen: the longest module part of a key.
const maxModuleLen = 120

// ValidKey reports whether key is the text of an entry key,
// "<module>-<64 lower-case hex digits>", with a module that
// cache.SanitizeModule leaves as it is (non-empty, at most 120 bytes of
// letters, digits, '_', '-' and '.', not starting with '.'). It is
// cache.ParseKey's rule, for names that must be judged without the core;
// bucket_test.go holds the two to agreement.
func ValidKey(key string) bool {
	i := strings.LastIndexByte(key, '-')
	if i <= 0 || i > maxModuleLen || len(key)-i-1 != keyDigestLen {
		return false
	}
	if _, ok := Shard(key); !ok {
		return false
	}
	if key[0] == '.' {
		return false
	}
	for j := 0; j < i; j++ {
		switch c := key[j]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// Names of exec's packs (package hostfill): a pack "hostfill/v1/<id>.pack"
// and its index "hostfill/v1/<id>.index", where id is 32 lower-case hex
// digits (half the SHA-256 of the pack) and v1 the pack format's version.
const (
	// PackPrefix starts the name of every pack and index.
	PackPrefix = "hostfill/v1/"
	// PackSuffix ends a pack's name.
	PackSuffix = ".pack"
	// PackIndexSuffix ends a pack index's name.
	PackIndexSuffix = ".index"
)

// packIDLen is the length of a pack's id in hex digits.
const packIDLen = 32

// PackObjects returns the store names of the pack with id and of its
// index.
func PackObjects(id string) (pack, index string) {
	return PackPrefix + id + PackSuffix, PackPrefix + id + PackIndexSuffix
}

// ParsePackObject returns the id of the pack or index named name, and
// whether it is the index; ok is false for any other name.
func ParsePackObject(name string) (id string, index, ok bool) {
	base, ok := strings.CutPrefix(name, PackPrefix)
	if !ok {
		return "", false, false
	}
	if id, ok = strings.CutSuffix(base, PackSuffix); !ok {
		if id, ok = strings.CutSuffix(base, PackIndexSuffix); !ok {
			return "", false, false
		}
		index = true
	}
	if len(id) != packIDLen {
		return "", false, false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false, false
		}
	}
	return id, index, true
}

// Names of XLA's raw files mirrored to the store (package xla/rawfiles):
// each autotune result under its own file name, and each published
// version of the kernel cache file under its content's SHA-256.
const (
	// XLAAutotunePrefix starts the name of every mirrored autotune result.
	XLAAutotunePrefix = XLAAutotuneDir + "/"
	// XLAKernelParts names the kernel cache file's published versions.
	XLAKernelParts = XLAKernelFile + ".parts"
	// XLAKernelPartsPrefix starts the name of every kernel cache part.
	XLAKernelPartsPrefix = XLAKernelParts + "/"
)

// XLAAutotuneObject returns the store name of the autotune result file
// base (a base name, validated by rawfiles.ValidAutotuneName).
func XLAAutotuneObject(base string) string { return XLAAutotunePrefix + base }

// XLAAutotuneBase returns the file name of the mirrored autotune result
// obj, and false when obj is not under XLAAutotunePrefix. The caller
// validates the name (rawfiles.ValidAutotuneName).
func XLAAutotuneBase(obj string) (base string, ok bool) {
	return strings.CutPrefix(obj, XLAAutotunePrefix)
}

// XLAKernelPartObject returns the store name of the kernel cache part
// whose content's SHA-256 is sum.
func XLAKernelPartObject(sum [sha256.Size]byte) string {
	return XLAKernelPartsPrefix + hex.EncodeToString(sum[:])
}
