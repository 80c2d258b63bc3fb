#!/usr/bin/env bash
# The README's test command: installs what the tests need, checks the formatting, runs the server
# bridges' own tests (Lua and a real Prosody for Prosody's; eunit and a real ejabberd for ejabberd's;
# the same wire checks for both), then
#   1. runs every libFuzzer target for FUZZ_SECONDS (default 20) from the checked-in corpus
#      (contrib/fuzz.sh: AddressSanitizer and its leak checker included);
#   2. builds and runs every test under each sanitizer in SANITIZERS (default "thread"; "thread
#      address" for both), each in a scratch path of its own (.build/tsan, .build/asan), its output
#      in .build/tsan-test.log, .build/asan-test.log (a failure's reports and failed tests are shown
#      again at the end of the whole run);
#   3. builds and runs every test (unit, and integration against a real Prosody and ejabberd, 23.01 and
#      24.12, that the tests start on loopback themselves), with swift test's own output: its summary
#      ends the run.
# Exits non-zero when any of them fails: a test, a fuzz finding, or a sanitizer report.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash contrib/setup-debian.sh
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
# Formatting is enforced: .swift-format, with the toolchain's swift-format (`swift-format format -i -r
# Sources Tests Fuzz Package.swift` fixes what it reports).
swift-format lint --strict -r Sources Tests Fuzz Package.swift
# Each target declares in Package.swift exactly the package's modules its files import.
python3 contrib/check-dependencies.py
# The Prosody bridge on its own: its stripping library in plain Lua, then the module in a real Prosody,
# 0.12 (bookworm's) and 13.0 (unpacked by contrib/prosody/backports.sh).
lua5.4 contrib/prosody/test/strip_test.lua
python3 contrib/prosody/test/bridge_test.py
python3 contrib/prosody/test/bridge_test.py --release 13
# The ejabberd bridge on its own: its eunit tests, then the module in a real ejabberd, loaded from
# the code path and installed through ejabberd's contrib mechanism; then the same built against and
# loaded into ejabberd 24.12 (unpacked by setup-debian.sh).
bash contrib/ejabberd/build.sh --test
python3 contrib/ejabberd/test/bridge_test.py --install code-path
python3 contrib/ejabberd/test/bridge_test.py --install contrib
bash contrib/ejabberd/build.sh --root /opt/apush-backports/ejabberd-24 --test
python3 contrib/ejabberd/test/bridge_test.py --install code-path --root /opt/apush-backports/ejabberd-24

failed=()
timed() {
    local start=$SECONDS
    "$@"
    local status=$?
    echo "($(( SECONDS - start )) s)"
    return "$status"
}

# The suites under one sanitizer; its log is kept, its summary and any report are shown.
sanitized_suites() {
    local sanitizer=$1 scratch=.build/${1:0:1}san
    local log=$scratch-test.log
    mkdir -p .build
    rm -f "$scratch-failure.txt"
    if ! swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$log" 2>&1; then
        grep -E 'error:' "$log" | head -20
        echo "$sanitizer sanitizer: the build failed (log $log)"
        return 1
    fi
    local status=0
    # TSan cannot see Synchronization.Mutex on Linux: the file suppresses the frames of withLock's
    # closures (and says why, and what else).
    # The leak checker is the fuzzers' job: in the suites it finds only Foundation's own leaks (each
    # launched Process, String(contentsOf:), XCTest's runner), all in test support.
    # APUSH_SANITIZED_RUN leaves the scenarios of a component child process under load to the plain
    # run (SanitizedRun).
    TSAN_OPTIONS="suppressions=$PWD/contrib/tsan-suppressions.txt:${TSAN_OPTIONS:-}" \
        ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" APUSH_SANITIZED_RUN=1 \
        swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" >>"$log" 2>&1 || status=$?
    local reports
    reports=$(grep -cE '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: (Address|Leak)Sanitizer)' "$log" || true)
    # Swift Testing's summary, and XCTest's when it ran any.
    grep -E '^(✔|✘) Test run with|Executed [1-9][0-9]* tests?,' "$log" | tail -2 | sed "s/^[[:space:]]*/$sanitizer sanitizer: /"
    if [ "$status" -ne 0 ] || [ "$reports" -ne 0 ]; then
        # Kept for the end of the run too, where a CI excerpt (the output's tail) shows it.
        {
            grep -E -A12 '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: (Address|Leak)Sanitizer)' "$log" | head -60
            grep -E '^✘ Test .* failed|error: |Fatal error|Crash|signal' "$log" | head -20
            echo "$sanitizer sanitizer: FAILED (exit $status, $reports report(s); log $log)"
        } | tee "$scratch-failure.txt"
        return 1
    fi
}

echo "== fuzzing every target for ${FUZZ_SECONDS:-20} s"
timed bash contrib/fuzz.sh "" "${FUZZ_SECONDS:-20}" || failed+=(fuzz)
for sanitizer in ${SANITIZERS-thread}; do
    echo "== the suites under the $sanitizer sanitizer"
    timed sanitized_suites "$sanitizer" || failed+=("$sanitizer-sanitizer")
done

echo "== the suites"
swift build --build-tests
status=0
swift test || status=$?
if [ "${#failed[@]}" -gt 0 ]; then
    cat .build/?san-failure.txt 2>/dev/null || true
    echo "contrib/test.sh: also failed: ${failed[*]}"
    exit 1
fi
exit "$status"
