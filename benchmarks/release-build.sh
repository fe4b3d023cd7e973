#!/usr/bin/env bash
# The one way release binaries are built, for `make release`, `make bench` and
# every benchmarks/run-*.sh. Sourced: defines `release_build PRODUCT [PACKAGE]`,
# which builds PRODUCT of the package at PACKAGE (default: the repository root)
# and prints the binary's path. Run: `bash benchmarks/release-build.sh PRODUCT
# [PACKAGE]` does the same.
#
# --static-swift-stdlib links the Swift runtime and Foundation into the binary,
# as a Linux program is usually shipped: a process then starts about 10 ms
# sooner than when it loads them as shared libraries (measured: 37.5 vs 47 ms
# for `harmonia-play --help`). FFmpeg and PulseAudio stay shared libraries.
RELEASE_FLAGS=(-c release --static-swift-stdlib)
: "${SWIFT:=$(command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)}"

release_build() {
  local product=$1 package=${2:-.}
  "$SWIFT" build "${RELEASE_FLAGS[@]}" --package-path "$package" --product "$product" >&2 || return
  printf '%s/%s\n' "$("$SWIFT" build "${RELEASE_FLAGS[@]}" --package-path "$package" --show-bin-path)" "$product"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  release_build "$@"
fi
