#!/usr/bin/env bash
# Unpacks Prosody 13.0 from bookworm-backports beside the installed Prosody 0.12, without replacing
# any package: the tests and the demo start it from
#   /opt/apush-backports/prosody-13/usr/bin/prosody (and prosodyctl there)
# (as root, on Debian bookworm, after contrib/setup-debian.sh installed Prosody 0.12 and Lua 5.4).
#
# apt resolves what installing 13.0 would take against the installed packages: prosody itself and
# any dependency bookworm's versions do not satisfy come from bookworm-backports and are downloaded
# with `apt-get download` and unpacked with `dpkg -x`; a dependency bookworm satisfies but that is not
# installed is installed from bookworm with apt-get as usual. (13.0.1 needs nothing newer: its Lua 5.4
# and Lua libraries are bookworm's, and it carries its own mod_cloud_notify, so prosody-modules is
# not needed.) apt's bookworm-backports source lives only in a private configuration under
# /opt/apush-backports/apt: the system's apt is not changed. The unpacked `prosody` and `prosodyctl`
# get CFG_SOURCEDIR, CFG_PLUGINDIR, CFG_CONFIGDIR and CFG_DATADIR inside the private root, so they
# load none of 0.12's code or modules. Idempotent: quick once done.
set -euo pipefail

prefix=/opt/apush-backports
root=$prefix/prosody-13
release=13.0
stamp=$root/.unpacked

if [ -f "$stamp" ] && [ -x "$root/usr/bin/prosody" ] && [ -x "$root/usr/bin/prosodyctl" ]; then
    exit 0
fi

fail() { echo "backports.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "run as root (it writes $prefix)"
dpkg-query -W -f='${Status}' prosody 2>/dev/null | grep -q "install ok installed" ||
    fail "prosody (bookworm's) is not installed: run contrib/setup-debian.sh first"

# The private apt (shared with the other backports script).
source "$(dirname "${BASH_SOURCE[0]}")/../backports-apt.sh"

# What installing 13.0 would install or upgrade ("Inst NAME [OLD] (NEW Suite [arch])"), split into
# what only backports has (unpacked here) and what bookworm has (installed as usual).
# (apt names the suite by its codename or, bookworm being oldstable now, "oldstable-backports".)
plan=$(apt-get "${apt_options[@]}" -s --no-install-recommends -t bookworm-backports install prosody)
from_backports=$(echo "$plan" | awk '/^Inst / && /Backports/ {
    version = ($3 ~ /^\[/) ? $4 : $3; sub(/^\(/, "", version); print $2 "=" version }')
from_bookworm=$(echo "$plan" | awk '/^Inst / && !/Backports/ { print $2 }')
echo "$from_backports" | grep -q "^prosody=$release" ||
    fail "bookworm-backports offers no prosody $release; apt would install: $(echo $from_backports)"
if [ -n "$from_bookworm" ]; then
    apt-get -qq update
    # shellcheck disable=SC2086 # one package a word
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $from_bookworm
fi

work=$(mktemp -d "$prefix/.prosody-13.XXXXXX")
trap 'rm -rf "$work"' EXIT
# apt's download sandbox user cannot write into root's temporary directory; it needs no sandbox here.
# shellcheck disable=SC2086 # one package a word
(cd "$work" && with_apt_lock apt-get "${apt_options[@]}" -qq -o APT::Sandbox::User=root download $from_backports)
mkdir "$work/root"
for deb in "$work"/*.deb; do
    dpkg -x "$deb" "$work/root"
done

# The launchers' paths (set by Prosody's configure script) become the private root's.
mkdir -p "$work/root/var/lib/prosody"
for launcher in prosody prosodyctl; do
    file=$work/root/usr/bin/$launcher
    sed -i -e "s|^CFG_SOURCEDIR='/usr/lib/prosody';|CFG_SOURCEDIR='$root/usr/lib/prosody';|" \
        -e "s|^CFG_CONFIGDIR='/etc/prosody';|CFG_CONFIGDIR='$root/etc/prosody';|" \
        -e "s|^CFG_PLUGINDIR='/usr/lib/prosody/modules/';|CFG_PLUGINDIR='$root/usr/lib/prosody/modules/';|" \
        -e "s|^CFG_DATADIR='/var/lib/prosody';|CFG_DATADIR='$root/var/lib/prosody';|" "$file"
    [ "$(grep -c "^CFG_[A-Z]*DIR='$root/" "$file")" -eq 4 ] ||
        fail "$launcher $release sets its CFG_*DIR paths differently than expected"
done
echo "$from_backports" > "$work/root/.unpacked"

rm -rf "$root"
mv "$work/root" "$root"
echo "backports.sh: prosody $release unpacked in $root"
