#!/usr/bin/env bash
# Builds the libFuzzer harnesses (Fuzz/Targets, with AddressSanitizer and its leak checker) and runs
# each for SECONDS (default 60) from the checked-in corpus Fuzz/Corpus/TARGET with the XMPP
# dictionary Fuzz/xmpp.dict; every target when none is named. New inputs go to
# .build/fuzz/corpus/TARGET, a crash or leak to .build/fuzz/artifacts/TARGET/, each run's log to
# .build/fuzz/logs/TARGET.log. Exits non-zero when any target found something.
#
#   contrib/fuzz.sh                      every target, 60 s each
#   contrib/fuzz.sh publish 600          one target, ten minutes
#   FUZZ_JOBS=2 contrib/fuzz.sh jid 600  two fuzzing processes side by side
#   FUZZ_RUNS=1000000 contrib/fuzz.sh    every target until 10^6 executions (or the time is up)
#   APUSH_FUZZ_TARGET=publish .build/fuzz/release/apush-fuzz FILE   replays one input
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

TARGETS=(stream-parser publish bridge data-form jid configuration http ad-hoc-session store-notification)
if [ "$#" -ge 1 ] && [ -n "$1" ]; then
    [[ " ${TARGETS[*]} " == *" $1 "* ]] || { echo "fuzz.sh: unknown target '$1' (${TARGETS[*]})" >&2; exit 2; }
    TARGETS=("$1")
fi
SECONDS_EACH="${2:-60}"
JOBS="${FUZZ_JOBS:-1}"
RUNS="${FUZZ_RUNS:--1}"

# libFuzzer and the ASan/LSan runtimes ship with the Swift toolchain (lib/clang/*/lib/linux).
runtime=$(dirname "$(command -v swift)")/../lib/clang
if ! ls "$runtime"/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    echo "fuzz.sh: this Swift toolchain has no libFuzzer runtime (libclang_rt.fuzzer) under $runtime" >&2
    exit 2
fi

scratch=.build/fuzz
mkdir -p "$scratch/logs"
if ! APUSH_FUZZ=1 swift build -c release --scratch-path "$scratch" --product apush-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -enable-testing \
    >"$scratch/logs/build.log" 2>&1; then
    grep -E 'error' "$scratch/logs/build.log" | head -20 || tail -20 "$scratch/logs/build.log"
    echo "fuzz: the build failed (log $scratch/logs/build.log)"
    exit 1
fi
binary="$scratch/release/apush-fuzz"

failed=()
for target in "${TARGETS[@]}"; do
    corpus="$scratch/corpus/$target" artifacts="$scratch/artifacts/$target" log="$scratch/logs/$target.log"
    mkdir -p "$corpus" "$artifacts"
    status=0
    # Swift's own crash handler would read memory ASan guards; libFuzzer reports the crash instead.
    SWIFT_BACKTRACE=enable=no APUSH_FUZZ_TARGET="$target" ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" \
        "$binary" "$corpus" "Fuzz/Corpus/$target" -dict=Fuzz/xmpp.dict -max_total_time="$SECONDS_EACH" -runs="$RUNS" \
        -max_len=4096 -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/" \
        $([ "$JOBS" -gt 1 ] && echo "-fork=$JOBS") >"$log" 2>&1 || status=$?
    runs=$(awk '/stat::number_of_executed_units:/ {s += $2} END {print s + 0}' "$log")
    time=$(awk '/^Done [0-9]+ runs in/ {t = $5} END {print t}' "$log")
    if [ "$status" -eq 0 ]; then
        echo "fuzz $target: $runs runs in ${time:-$SECONDS_EACH} s, no crash, no leak"
    else
        echo "fuzz $target: FAILED (exit $status) after $runs runs; log $log, input in $artifacts/"
        grep -E 'ERROR:|fuzz finding|Fatal error|SUMMARY|Test unit written' "$log" | head -20 || true
        failed+=("$target")
    fi
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: ${#failed[@]} of ${#TARGETS[@]} target(s) failed: ${failed[*]}"
    exit 1
fi
echo "fuzz: ${#TARGETS[@]} target(s), no crash, no leak"
