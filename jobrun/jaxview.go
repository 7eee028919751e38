package jobrun

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// One path for JAX on every host.
//
// JAX hashes paths under its cache directory into its keys (tested with
// jaxlib 0.4.36 and 0.12.0.1, xla/jaxtest TestDistributedJobKeys):
//   - the compile options, which carry
//     <JAX_COMPILATION_CACHE_DIR>/xla_gpu_kernel_cache_file whenever the
//     kernel cache is on (every release), and
//     <dir>/xla_gpu_per_fusion_autotune_cache_dir before jax 0.11 (later
//     releases clear it);
//   - XLA_FLAGS, split on whitespace: exec's autotune-directory flag is
//     hashed before jax 0.11, and from 0.11 on a path with a space leaks
//     its tail into the key (JAX excludes the token with the flag's name,
//     not the rest of the quoted value).
//
// So hosts whose directories have different paths (a per-job $TMPDIR, a
// different disk per node, an import elsewhere) would never share an
// entry. exec therefore gives JAX the directory through a symbolic link
// whose path is the same on every host of a job:
//
//	/tmp/xlacache-<uid>/jax-<first 16 hex of SHA-256(XLACACHE_SHARED_URL)>
//
// pointing at the host's real directory. Without a shared tier no other
// host shares the job's entries, and the name comes from the directory's
// own path instead ("jax-d-<hash>"): jobs on other directories of the host
// then never contend for one name, and a job's keys stay the same from
// run to run. /tmp is local to each host, so
// each host's link leads to its own directory. The link's directory is
// the user's own (0700, checked: owner, not a symbolic link, nobody else
// can write), so no one else can point JAX elsewhere.
//
// Every exec process that uses the link holds a shared flock on
// <link>.lock for as long as its command runs; the link is created or
// repointed only under the exclusive lock, so a job never has its link
// repointed under it. When another live job on the host holds the name
// for another directory, this one gives JAX its real path (one log line):
// keys then differ from the other hosts' for the settings above, as they
// would without the link.

// jaxViewRoot is where the per-user link directories live: a path that
// is the same on every host and local to each. A variable for tests.
var jaxViewRoot = "/tmp"

// jaxView is a held link to the cache directory.
type jaxView struct {
	// Path is what JAX is given as its cache directory.
	Path string
	lock *os.File
}

// Close releases the link for other jobs of the host.
func (v *jaxView) Close() error {
	if v == nil || v.lock == nil {
		return nil
	}
	err := v.lock.Close()
	v.lock = nil
	return err
}

// jaxViewName is the link's name for a job: the same on every host of a
// job (they share the bucket), different for jobs with different buckets;
// without a bucket, one per directory.
func jaxViewName(sharedURL, dir string) string {
	if sharedURL == "" {
		sum := sha256.Sum256([]byte(dir))
		return "jax-d-" + hex.EncodeToString(sum[:])[:16]
	}
	sum := sha256.Sum256([]byte(sharedURL))
	return "jax-" + hex.EncodeToString(sum[:])[:16]
}

// openJAXView returns a held link named for sharedURL (or dir) that leads
// to dir (absolute), creating or repointing it when no other job holds it.
func openJAXView(dir, sharedURL string) (*jaxView, error) {
	uid := os.Getuid()
	base := filepath.Join(jaxViewRoot, "xlacache-"+strconv.Itoa(uid))
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("jax link directory: %w", err)
	}
	// Checked after creating, not instead of: another user may have made
	// it first, or made it a link to their own directory.
	var st unix.Stat_t
	if err := unix.Lstat(base, &st); err != nil {
		return nil, fmt.Errorf("jax link directory: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return nil, fmt.Errorf("jax link directory %s is not a directory", base)
	case int(st.Uid) != uid:
		return nil, fmt.Errorf("jax link directory %s belongs to uid %d, not %d", base, st.Uid, uid)
	case st.Mode&0o022 != 0:
		return nil, fmt.Errorf("jax link directory %s can be written by others (mode %o)", base, st.Mode&0o777)
	}
	link := filepath.Join(base, jaxViewName(sharedURL, dir))
	lock, err := os.OpenFile(link+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jax link lock: %w", err)
	}
	v := &jaxView{Path: link, lock: lock}
	fd := int(lock.Fd())
	// Exclusive first, so that the first process of a job can make the
	// link; the others of the host (or a job holding it) keep it shared.
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err == nil {
		if cur, err := os.Readlink(link); err != nil || cur != dir {
			if err := replaceLink(dir, link); err != nil {
				lock.Close()
				return nil, err
			}
		}
		// Linux converts a lock by dropping it first: another job may
		// have repointed the link in between, so it is read again below.
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
			lock.Close()
			return nil, fmt.Errorf("jax link lock: %w", err)
		}
	} else if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		// Held by others: wait for a shared lock (an exclusive holder
		// keeps it for a readlink and a rename only), then use the link
		// if it leads here.
		lock.Close()
		return nil, fmt.Errorf("jax link lock: %w", err)
	}
	if cur, err := os.Readlink(link); err != nil || cur != dir {
		lock.Close()
		if err != nil {
			return nil, fmt.Errorf("jax link: %w", err)
		}
		return nil, fmt.Errorf("jax link %s is held by a running job for %s", link, cur)
	}
	return v, nil
}

// replaceLink points link at dir atomically: a new link beside it,
// renamed over it.
func replaceLink(dir, link string) error {
	tmp := link + ".tmp." + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(dir, tmp); err != nil {
		return fmt.Errorf("jax link: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("jax link: %w", err)
	}
	return nil
}
