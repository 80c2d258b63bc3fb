#!/usr/bin/env bash
# The README's main command: the whole mission on one screen. Starts, on loopback, a Prosody 0.12 with
# the bridge (`--server prosody13`: Prosody 13.0; `--server ejabberd` or `ejabberd24`: an ejabberd 23.01
# or 24.12 with its bridge; the newer releases are unpacked by contrib/*/backports.sh), the component
# with an SQLite store and a demo App Server that opens each push with the demo device's key; then a
# client enables push, goes offline, and gets a burst, a call and a read. `--verbose` shows the
# component's debug log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash contrib/setup-debian.sh >/dev/null
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
echo "building the demo (the first build takes a few minutes)…" >&2
if ! build_log=$(swift build --product apush-demo 2>&1); then
    echo "$build_log" >&2
    exit 1
fi
exec "$(swift build --show-bin-path)/apush-demo" "$@"
