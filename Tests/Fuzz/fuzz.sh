#!/usr/bin/env bash
# Fuzzing (specs/testing.md §Fuzzing): builds harmonia-play for libFuzzer
# (AddressSanitizer, coverage, -DFUZZING) and runs each fuzz target.
#
#   Tests/Fuzz/fuzz.sh build              build .build-fuzz/release/harmonia-play only
#   Tests/Fuzz/fuzz.sh run [TARGET...]    build, then fuzz each target (default: all)
#
# Environment: FUZZ_SECONDS (per target, default 180), FUZZ_WORK (default
# .build-fuzz/work), FUZZ_JOBS (parallel processes per target, default 1),
# FUZZ_FLAGS (more libFuzzer flags), FUZZ_BUILD=0 (use the binary as it is), SWIFT.
#
# Per target, in $FUZZ_WORK/TARGET/: seeds/ (copied from Tests/Fixtures and
# Tests/Fuzz/seeds on every run; no binary is duplicated in git), corpus/
# (what the fuzzer learned, kept between runs), artifacts/ and log.txt. A crash
# (or leak, timeout, out-of-memory) is minimised with -minimize_crash=1 and the
# result copied to Tests/Fixtures/fuzz/TARGET/, which `make test` replays
# (Tests/HarmoniaPlayTests/FuzzRegressionTests.swift); the run then fails.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
SWIFT=${SWIFT:-$(command -v swift || echo /opt/swift/usr/bin/swift)}
FUZZ_SECONDS=${FUZZ_SECONDS:-180}
FUZZ_WORK=${FUZZ_WORK:-$ROOT/.build-fuzz/work}
FUZZ_JOBS=${FUZZ_JOBS:-1}
FUZZ_FLAGS=${FUZZ_FLAGS:-}
TARGETS=(decode tags taglists metadata playlist control)
BINARY=$ROOT/.build-fuzz/release/harmonia-play
# Swift's own crash backtracer would take over the trap signal from libFuzzer.
export SWIFT_BACKTRACE=enable=no
# The fuzz targets read files, not the network: build without the web remote (Package.swift).
export HARMONIA_WITHOUT_WEB=1

build() {
    # SwiftPM links an executable's own main, so libFuzzer comes without its
    # main (libclang_rt.fuzzer_no_main) and harmonia-play calls its driver.
    local toolchain libfuzzer
    toolchain=$(dirname "$(dirname "$(readlink -f "$SWIFT")")")
    libfuzzer=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -1)
    if [ -z "$libfuzzer" ]; then
        echo "fuzz.sh: libclang_rt.fuzzer_no_main not found under $toolchain/lib/clang (a swift.org toolchain ships it)" >&2
        exit 1
    fi
    "$SWIFT" build -c release --scratch-path "$ROOT/.build-fuzz" --product harmonia-play \
        -Xswiftc -DFUZZING -Xswiftc -sanitize=address \
        -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
        -Xlinker "$libfuzzer" -Xlinker -lstdc++ 2>&1 | grep -v -e 'Cannot export local symbol' -e 'prohibited flag'
    test -x "$BINARY"
}

# The seed inputs of TARGET, into $1.
seeds() {
    local target=$1 dir=$2
    rm -rf "$dir" && mkdir -p "$dir"
    case $target in
        decode|tags|taglists)
            for f in Tests/Fixtures/audio/* Tests/Fixtures/bad/* Tests/Fixtures/gapless/*; do
                case $f in *.json) continue ;; esac
                cp "$f" "$dir/"
            done ;;
    esac
    if [ -d "Tests/Fuzz/seeds/$target" ]; then cp Tests/Fuzz/seeds/"$target"/* "$dir/"; fi
    if [ -d "Tests/Fixtures/fuzz/$target" ]; then cp Tests/Fixtures/fuzz/"$target"/* "$dir/" 2>/dev/null || true; fi
}

# libFuzzer flags per target: the largest input, and a dictionary when there is one.
target_flags() {
    local target=$1
    case $target in
        decode|tags|taglists) echo -n "-max_len=262144 " ;;
        *) echo -n "-max_len=16384 " ;;
    esac
    [ -f "Tests/Fuzz/dicts/$target.dict" ] && echo -n "-dict=$ROOT/Tests/Fuzz/dicts/$target.dict"
    return 0
}

run_target() {
    local target=$1 work=$FUZZ_WORK/$1
    mkdir -p "$work/corpus" "$work/artifacts"
    rm -f "$work"/artifacts/*  # the last run's findings were kept in Tests/Fixtures/fuzz
    seeds "$target" "$work/seeds"
    echo "fuzz.sh: $target for ${FUZZ_SECONDS}s (work: $work)"
    local status=0
    # -fork with -ignore_crashes goes on after a finding, so one run collects
    # every crash it meets; each is minimised below.
    # shellcheck disable=SC2046,SC2086
    HARMONIA_FUZZ_TARGET=$target \
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1} \
    LSAN_OPTIONS=suppressions=$ROOT/Tests/lsan-suppressions.txt \
        "$BINARY" $(target_flags "$target") -max_total_time="$FUZZ_SECONDS" -timeout=20 -rss_limit_mb=2048 \
        -fork="$FUZZ_JOBS" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -artifact_prefix="$work/artifacts/" -print_final_stats=1 $FUZZ_FLAGS \
        "$work/corpus" "$work/seeds" > "$work/log.txt" 2>&1 || status=$?
    grep -E '^#[0-9]+.*(DONE|cov:)' "$work/log.txt" | tail -1 || true
    grep -E '^stat::' "$work/log.txt" || true
    local found=0
    for artifact in "$work"/artifacts/crash-* "$work"/artifacts/leak-* "$work"/artifacts/timeout-* "$work"/artifacts/oom-*; do
        [ -e "$artifact" ] || continue
        found=1
        minimise "$target" "$artifact"
    done
    if [ $found -eq 0 ] && [ $status -eq 72 ]; then
        # libFuzzer's exit code when a signal (SIGINT, SIGTERM) stopped it.
        echo "fuzz.sh: $target: interrupted, nothing found (see $work/log.txt)" >&2
        return 130
    fi
    if [ $found -eq 1 ] || [ $status -ne 0 ]; then
        echo "fuzz.sh: $target: findings (libFuzzer exit $status); see $work/log.txt" >&2
        return 1
    fi
}

# Minimises one artifact and keeps it under Tests/Fixtures/fuzz/TARGET/.
minimise() {
    local target=$1 artifact=$2 kind minimised
    kind=$(basename "$artifact" | cut -d- -f1)
    minimised="$artifact.min"
    HARMONIA_FUZZ_TARGET=$target \
    LSAN_OPTIONS=suppressions=$ROOT/Tests/lsan-suppressions.txt \
        "$BINARY" -minimize_crash=1 -max_total_time=60 -timeout=20 -exact_artifact_path="$minimised" \
        "$artifact" > "$artifact.minimise.txt" 2>&1 || true
    [ -s "$minimised" ] || minimised=$artifact
    mkdir -p "Tests/Fixtures/fuzz/$target"
    local kept
    kept="Tests/Fixtures/fuzz/$target/$kind-$(sha1sum "$minimised" | cut -c1-16)"
    cp "$minimised" "$kept"
    echo "fuzz.sh: $target: $kind kept as $kept ($(wc -c < "$kept") bytes); its report:" >&2
    HARMONIA_FUZZ_TARGET=$target LSAN_OPTIONS=suppressions=$ROOT/Tests/lsan-suppressions.txt \
        "$BINARY" -timeout=20 "$kept" 2>&1 | grep -E 'ERROR|Fatal error|#[0-9]+ 0x|SUMMARY' | head -25 >&2 || true
}

case ${1:-run} in
    build) build ;;
    run)
        shift || true
        [ $# -gt 0 ] && TARGETS=("$@")
        [ "${FUZZ_BUILD:-1}" = 0 ] || build
        failed=()
        for target in "${TARGETS[@]}"; do
            rc=0
            run_target "$target" || rc=$?
            [ $rc -ne 130 ] || exit 130  # interrupted: the targets after it do not run
            [ $rc -eq 0 ] || failed+=("$target")
        done
        if [ ${#failed[@]} -gt 0 ]; then echo "fuzz.sh: findings in: ${failed[*]}" >&2; exit 1; fi
        echo "fuzz.sh: no findings in ${TARGETS[*]}" ;;
    *) echo "usage: $0 [build | run [TARGET...]]" >&2; exit 2 ;;
esac
