#!/usr/bin/env bash
# The README's test command: installs everything the tests need that a
# fresh machine lacks, then runs every test, peers included.
#
#   scripts/test.sh            everything (what CI runs: .ci/run calls it)
#   scripts/test.sh -short     the Go suite only, with -short (no GoMLX suites)
#
# What it installs: a C compiler (and OpenBLAS, for one benchmark) from
# Debian's packages when missing; versitygw and fake-gcs-server (the S3 and
# GCS-API servers the shared-tier tests run on loopback) with `go install`;
# the Python peers (real JAX and
# XLA's CPU PJRT plugins, pinned and hash-checked, in venvs under the user
# cache directory) with scripts/peers.sh. Each is reused on the next run.
#
# Tests that need something missing skip with one line outside CI and fail
# under CI=true; the groups that were skipped are summed up in one line at
# the end (internal/testneed writes them to $XLACACHE_SKIP_LOG).
set -euo pipefail
cd "$(dirname "$0")/.."

short=()
if [ "${1:-}" = "-short" ]; then
  short=(-short)
  shift
fi

export PATH="$(go env GOPATH)/bin:$PATH"

# The cpu backend compiles generated C with the system C compiler; its
# benchmarks compare against OpenBLAS when libopenblas is installed.
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
ldconfig -p 2>/dev/null | grep 'libopenblas\.so\.0' >/dev/null || need+=(libopenblas-dev)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO="sudo"
  # OpenBLAS only serves a benchmark: failing to install it must not fail
  # the run as long as a C compiler is there.
  { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends "${need[@]}"; } ||
    command -v cc >/dev/null 2>&1 || { echo "test.sh: no C compiler (cc) and apt-get could not install gcc" >&2; exit 1; }
fi

# The shared-tier tests run against a real S3 server on loopback.
if ! command -v versitygw >/dev/null 2>&1 || ! versitygw --version 2>/dev/null | grep -q 'v1\.8\.0'; then
  go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
fi
# ... and against a GCS-API server (gs://, internal/testsupport/gcstest),
# pinned: the version its module records must be the one the tests expect.
if ! command -v fake-gcs-server >/dev/null 2>&1 ||
  ! go version -m "$(command -v fake-gcs-server)" 2>/dev/null | grep -Eq '^\s+mod\s+github\.com/fsouza/fake-gcs-server\s+v1\.56\.1\s'; then
  go install github.com/fsouza/fake-gcs-server@v1.56.1
fi

# Real JAX and real XLA PJRT plugins for the tests that drive them.
scripts/peers.sh

# Static checks.
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...

skiplog=$(mktemp "${TMPDIR:-/tmp}/xlacache-skips.XXXXXX")
trap 'rm -f "$skiplog"' EXIT
export XLACACHE_SKIP_LOG="$skiplog"

status=0
go test "${short[@]}" -timeout 30m ./... || status=$?

# GoMLX's own test suites against the xlacache GoMLX backend (docs/gomlx.md).
if [ $status -eq 0 ] && [ ${#short[@]} -eq 0 ]; then
  .ci/gomlx-conformance || status=$?
fi

# One line for every group of tests that skipped for want of something.
if [ -s "$skiplog" ]; then
  summary=$(sort "$skiplog" | uniq -c |
    sed -E 's/^ *([0-9]+) ([^\t]*)\t(.*)$/\2: \3 (\1 tests)/' | paste -sd ';' - | sed 's/;/; /g')
  echo "test.sh: skipped for want of: $summary"
else
  echo "test.sh: nothing skipped"
fi
exit $status
