#!/usr/bin/env bash
# The README's test command: installs what the tests need, then builds and runs every test (unit,
# and integration against a real Prosody and ejabberd that the tests start on loopback themselves).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash contrib/setup-debian.sh
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
swift test
