#!/usr/bin/env bash
# Installs what apush-component needs on Debian bookworm (as root; Swift unpacked at /opt/swift):
# the C libraries it links, the servers its tests and demo start, Python's cryptography for the
# independent envelope opener, and slixmpp for the commands' independent client. Idempotent; quick
# when everything is there already. No system service is left running: tests and the demo start their
# own servers on loopback ports of their own.
set -euo pipefail

# The C libraries behind CXML2, CSodium, CCrypto, CSQLite, CLibPQ; the servers the integration tests
# start (prosody pulls lua5.4 and its Lua libraries in; prosody-modules carries mod_cloud_notify;
# postgresql-15 brings initdb and postgres under /usr/lib/postgresql/15/bin).
PACKAGES=(
    pkg-config libxml2-dev libsodium-dev libssl-dev libsqlite3-dev libpq-dev
    prosody prosody-modules ejabberd erlang-dev lua5.4 postgresql-15
    python3 python3-cryptography
    # What the Swift toolchain and Foundation themselves need on Debian.
    binutils libc6-dev libgcc-12-dev libstdc++-12-dev libcurl4 libedit2 libpython3-dev
    libz3-dev zlib1g-dev tzdata ca-certificates
)

# Without a policy, installing prosody and ejabberd would start their system services on 5222/5347.
created_policy=false
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=true
fi

missing=()
for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [ "$created_policy" = true ]; then
    rm -f /usr/sbin/policy-rc.d
fi

# Stop a system service the installation may have started anyway (e.g. under a running systemd).
stop_service() {
    if [ -d /run/systemd/system ]; then
        systemctl stop "$1" || true
        systemctl disable "$1" 2>/dev/null || true
    else
        /etc/init.d/"$1" stop || true
    fi
}
if [ -s /run/prosody/prosody.pid ] && kill -0 "$(cat /run/prosody/prosody.pid)" 2>/dev/null; then
    stop_service prosody
fi
if [ -s /run/ejabberd/ejabberd.pid ] && kill -0 "$(cat /run/ejabberd/ejabberd.pid)" 2>/dev/null; then
    stop_service ejabberd
fi
if [ -n "$(ls /run/postgresql/*.pid 2>/dev/null)" ]; then
    stop_service postgresql
fi

# initdb and postgres refuse to run as root: tests run as root start their PostgreSQL as this user,
# which owns nothing but the temporary directories the tests give it.
if ! id -u apush-test >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin apush-test
fi

if ! python3 -c 'import cryptography' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-pip
    python3 -m pip install --break-system-packages cryptography
fi
# slixmpp, an independently written XMPP client library: the commands' end-to-end test drives every
# command through it (Tests/IntegrationTests/Clients/commands_slixmpp.py). Pinned: the test reads its API.
if ! python3 -c 'import slixmpp' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-pip
    python3 -m pip install --break-system-packages 'slixmpp==1.17.0'
fi

# Prosody 13.0 and ejabberd 24.12 beside 0.12 and 23.01, unpacked from bookworm-backports into
# /opt/apush-backports (the tests and the demo run every release).
bash "$(dirname "${BASH_SOURCE[0]}")/prosody/backports.sh"
bash "$(dirname "${BASH_SOURCE[0]}")/ejabberd/backports.sh"
