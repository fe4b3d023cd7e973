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

# Relative relocations packed (DT_RELR, `-z pack-relative-relocs`, which the
# toolchain's lld writes and gold does not) where the C library reads them
# (glibc 2.36 and later): the loader no longer reads a 1.8 MB relocation
# table at every start (measured: peak RSS of `--version` 40.1 vs 41.3 MB).
# The binary then needs glibc 2.36 wherever it runs; it already needs the
# build machine's libavcodec.
glibc_version=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -x "$(dirname "$(readlink -f "$SWIFT")")/ld.lld" ] && [ -n "$glibc_version" ] \
   && [ "$(printf '%s\n' 2.36 "$glibc_version" | sort -V | head -n1)" = 2.36 ]; then
  RELEASE_FLAGS+=(-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
fi

release_build() {
  local product=$1 package=${2:-.}
  "$SWIFT" build "${RELEASE_FLAGS[@]}" --package-path "$package" --product "$product" >&2 || return
  printf '%s/%s\n' "$("$SWIFT" build "${RELEASE_FLAGS[@]}" --package-path "$package" --show-bin-path)" "$product"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  release_build "$@"
fi
