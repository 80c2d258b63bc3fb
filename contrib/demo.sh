#!/usr/bin/env bash
# The README's main command: the whole mission on one screen. Starts, on loopback, a Prosody with the
# bridge, the component with an SQLite store and a demo App Server that opens each push with the demo
# device's key; then a client enables push, goes offline, and gets a burst, a call and a read.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash contrib/setup-debian.sh >/dev/null
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift build --product apush-demo 2>&1 | grep -E "error|warning: |Compiling|Build complete" >&2 || true
exec "$(swift build --show-bin-path)/apush-demo" "$@"
