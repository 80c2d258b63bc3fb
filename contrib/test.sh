#!/usr/bin/env bash
# The README's test command: installs what the tests need, then builds and runs every test (unit,
# and integration against a real Prosody and ejabberd that the tests start on loopback themselves).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash contrib/setup-debian.sh
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
# The Prosody bridge on its own: its stripping library in plain Lua, then the module in a real Prosody.
lua5.4 contrib/prosody/test/strip_test.lua
python3 contrib/prosody/test/bridge_test.py
swift build --build-tests
swift test
