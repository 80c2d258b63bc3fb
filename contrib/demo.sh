#!/usr/bin/env bash
# The README's main command: the whole mission on one screen. Starts, on loopback, a Prosody with the
# bridge (or, with `--server ejabberd`, an ejabberd 23.01 with its bridge; `--server ejabberd24`, an
# ejabberd 24.12, unpacked by contrib/ejabberd/backports.sh), the component with an SQLite
# store and a demo App Server that opens each push with the demo device's key; then a client enables
# push, goes offline, and gets a burst, a call and a read. `--verbose` shows the component's debug log.
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
