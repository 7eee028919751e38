#!/usr/bin/env bash
# peers.sh: installs the peer environments the tests drive (real JAX, real
# PJRT plugins) from the pinned, hash-checked lists in peers/*.txt.
#
#   scripts/peers.sh              install every list (reused when present)
#   scripts/peers.sh jax-0.4.36   install only the lists named
#   scripts/peers.sh --lock NAME REQUIREMENT...
#                                 (re)write peers/NAME.txt: every wheel pip
#                                 resolves for REQUIREMENT, pinned, hashed
#
# Each list gets a venv under
#   ${XLACACHE_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xlacache-peers}/NAME-HASH12
# (HASH12: the first 12 hex digits of the list's SHA-256), installed with
# `pip install --require-hashes --no-deps` and marked complete only after
# pip succeeds, so an interrupted install is redone and an edited list gets
# a fresh venv. current.env in that directory then names each Python:
#   XLACACHE_PEER_JAX_0_12_0_1=<venv>/bin/python
# Go tests find the venvs themselves (internal/testneed); a test whose peer
# is missing skips, or fails under CI=true.
#
# Python >= 3.12 comes from XLACACHE_PEERS_PYTHON, else pyenv, else PATH.
# Python is only for driving JAX in tests; the product is Go.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
peers_dir=${XLACACHE_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/xlacache-peers}
marker=.xlacache-peers-ok

die() { echo "peers.sh: $*" >&2; exit 1; }

# find_python prints an interpreter >= 3.12, or fails with one line.
find_python() {
  local c v
  if [ -n "${XLACACHE_PEERS_PYTHON:-}" ]; then
    ok_python "$XLACACHE_PEERS_PYTHON" ||
      die "XLACACHE_PEERS_PYTHON=$XLACACHE_PEERS_PYTHON is not a Python >= 3.12"
    echo "$XLACACHE_PEERS_PYTHON"; return
  fi
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(ls -1 "$(pyenv root)/versions" 2>/dev/null | grep -E '^3\.[0-9]+\.[0-9]+$' | sort -t. -k2,2n -k3,3n); do
      c="$(pyenv root)/versions/$v/bin/python3"
      # The lists are locked for 3.12 (cp312 wheels): prefer it.
      case $v in 3.12.*) ok_python "$c" && { echo "$c"; return; } ;; esac
    done
  fi
  for c in python3.12 python3 python; do
    c=$(command -v "$c" 2>/dev/null) || continue
    ok_python "$c" && { echo "$c"; return; }
  done
  die "no Python 3.12 found (tried XLACACHE_PEERS_PYTHON, pyenv versions, python3.12/python3 on PATH); install one, e.g. 'pyenv install 3.12', or set XLACACHE_PEERS_PYTHON"
}

# ok_python: the lists pin cp312 wheels, so exactly 3.12.
ok_python() {
  [ -x "$1" ] || [ -n "$(command -v "$1" 2>/dev/null)" ] || return 1
  "$1" -c 'import sys, venv; sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)' 2>/dev/null
}

env_name() { # jax-0.12.0.1 -> XLACACHE_PEER_JAX_0_12_0_1
  local n=${1^^}
  echo "XLACACHE_PEER_${n//[^A-Z0-9]/_}"
}

lock() {
  local name=$1; shift
  [ $# -gt 0 ] || die "--lock NAME REQUIREMENT...: no requirement given"
  local py
  tmp=""
  py=$(find_python)
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$py" -m pip download --quiet --no-cache-dir --only-binary=:all: --dest "$tmp" "$@" ||
    die "pip download $* failed (is the package index reachable?)"
  {
    echo "# peers/$name.txt: written by scripts/peers.sh --lock $name $*"
    echo "# CPython 3.12, linux x86_64; install: scripts/peers.sh $name"
    for w in "$tmp"/*.whl; do
      "$py" - "$w" <<'PY'
import hashlib, sys, re, os
w = sys.argv[1]
name, version = os.path.basename(w).split("-")[:2]
h = hashlib.sha256(open(w, "rb").read()).hexdigest()
print(f"{re.sub(r'[-_.]+', '-', name).lower()}=={version} \\\n    --hash=sha256:{h}")
PY
    done
  } >"$root/peers/$name.txt"
  echo "wrote peers/$name.txt"
}

install_list() {
  local list=$1 name hash venv py log
  name=$(basename "$list" .txt)
  hash=$(sha256sum "$list" | cut -c1-12)
  venv=$peers_dir/$name-$hash
  if [ ! -f "$venv/$marker" ]; then
    # One installer per venv: the cache directory is shared by every
    # checkout of the user, and a second installer would delete the venv
    # under the first. Venvs cannot be moved into place (their scripts name
    # their path), hence a lock rather than a rename.
    mkdir -p "$peers_dir"
    exec {lockfd}>"$peers_dir/.$name-$hash.lock"
    if command -v flock >/dev/null 2>&1; then
      flock "$lockfd" || die "cannot lock $peers_dir/.$name-$hash.lock"
    fi
  fi
  if [ ! -f "$venv/$marker" ]; then
    py=$(find_python)
    rm -rf "$venv"
    mkdir -p "$peers_dir"
    log=$(mktemp)
    "$py" -m venv "$venv" >"$log" 2>&1 ||
      die "cannot create a venv with $py in $venv: $(tail -n1 "$log") (run again to retry)"
    echo "peers.sh: installing $name into $venv" >&2
    if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input \
        --require-hashes --no-deps --only-binary=:all: -r "$list" >"$log" 2>&1; then
      if grep -qiE 'NewConnectionError|Connection refused|Temporary failure in name resolution|timed out|ProxyError|SSLError|connection error' "$log"; then
        die "package index ${PIP_INDEX_URL:-https://pypi.org/simple} unreachable while installing $name: $(grep -iE 'connection|timed out|proxy|ssl' "$log" | tail -n1 | cut -c1-200)"
      fi
      if grep -q 'from versions: none' "$log"; then
        die "package index ${PIP_INDEX_URL:-https://pypi.org/simple} unreachable, or it has no $(grep -o 'requirement [^ ]*' "$log" | head -n1 | cut -d' ' -f2) (installing $name; full log: $log)"
      fi
      die "pip install of $name failed: $(grep -iE 'error' "$log" | tail -n1) (full log: $log)"
    fi
    rm -f "$log"
    touch "$venv/$marker"
  fi
  [ -z "${lockfd:-}" ] || { exec {lockfd}>&-; unset lockfd; }
  echo "$(env_name "$name")=$venv/bin/python"
}

if [ "${1:-}" = "--lock" ]; then
  shift
  [ $# -ge 1 ] || die "--lock NAME REQUIREMENT..."
  lock "$@"
  exit 0
fi

lists=()
if [ $# -eq 0 ]; then
  lists=("$root"/peers/*.txt)
else
  for n in "$@"; do
    [ -f "$root/peers/$n.txt" ] || die "no list peers/$n.txt"
    lists+=("$root/peers/$n.txt")
  done
fi

mkdir -p "$peers_dir"
out=$(mktemp "$peers_dir/.current.XXXXXX")
trap 'rm -f "$out"' EXIT
for l in "${lists[@]}"; do
  install_list "$l" >>"$out"
done
# Keep other lists' lines when only some were named.
if [ -f "$peers_dir/current.env" ]; then
  while IFS= read -r line; do
    grep -q "^${line%%=*}=" "$out" || echo "$line" >>"$out"
  done <"$peers_dir/current.env"
fi
mv "$out" "$peers_dir/current.env"
cat "$peers_dir/current.env"
