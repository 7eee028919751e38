package layout

import "strings"

// Names in the shared store (the bucket, below its configured prefix).
//
// Every top-level namespace in use today:
//
//	executables/<key>                   entries of the executables tier (ObjectName)
//	<backend>/<subcache>/<key>          entries of a backend's tier (ObjectName)
//	lease.<tier>.<key>                  single-flight leases (LeaseObject)
//	lease-probe.<token>[-missing]       scratch objects of the conditional-write probe (ProbeObject)
//	used/<tier>/<key>                   usage markers (UsedMarker)
//	hostfill/v1/...                     exec's packs and indexes (hostfill.Prefix)
//	xla_gpu_kernel_cache_file.parts/... XLA's kernel-cache parts (internal/subcache.KernelParts)
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
