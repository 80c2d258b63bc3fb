#!/usr/bin/env bash
# Unpacks ejabberd 24.12 from bookworm-backports beside the installed ejabberd 23.01, without
# installing or replacing any package: the tests and the demo start it from
#   /opt/apush-backports/ejabberd-24/usr/sbin/ejabberdctl
# (as root, on Debian bookworm, after contrib/setup-debian.sh installed ejabberd 23.01 and Erlang 25).
#
# Downloaded with `apt-get download`: ejabberd itself and every dependency whose required version is
# newer than bookworm's (its erlang-p1-* libraries and erlang-jose; Erlang/OTP 25 is new enough), as
# apt itself resolves them against the installed packages. apt's bookworm-backports source lives only
# in a private configuration under /opt/apush-backports/apt: the system's apt is not changed.
# Everything is unpacked with `dpkg -x`; the unpacked ejabberdctl gets an ERL_LIBS that names the
# unpacked libraries (they come before Erlang's own library directory, which holds 23.01's older
# ones) and not /usr/lib/<arch>, which holds ejabberd 23.01. Idempotent: quick once done.
set -euo pipefail

prefix=/opt/apush-backports
root=$prefix/ejabberd-24
release=24.12
stamp=$root/.unpacked

if [ -f "$stamp" ] && [ -x "$root/usr/sbin/ejabberdctl" ]; then
    exit 0
fi

fail() { echo "backports.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "run as root (it writes $prefix)"
command -v dpkg-query >/dev/null && dpkg-query -W -f='${Status}' ejabberd 2>/dev/null | grep -q "install ok installed" ||
    fail "ejabberd (bookworm's) is not installed: run contrib/setup-debian.sh first"

# The private apt (shared with the other backports script).
source "$(dirname "${BASH_SOURCE[0]}")/../backports-apt.sh"

# What installing 24.12 would install or upgrade: exactly ejabberd and the dependencies bookworm's
# versions do not satisfy ("Inst NAME [OLD] (NEW Suite [arch])").
packages=$(apt-get "${apt_options[@]}" -s -t bookworm-backports install ejabberd |
    awk '/^Inst / { version = ($3 ~ /^\[/) ? $4 : $3; sub(/^\(/, "", version); print $2 "=" version }')
echo "$packages" | grep -q "^ejabberd=$release-" ||
    fail "bookworm-backports offers no ejabberd $release; apt would install: $(echo $packages)"

work=$(mktemp -d "$prefix/.ejabberd-24.XXXXXX")
trap 'rm -rf "$work"' EXIT
# apt's download sandbox user cannot write into root's temporary directory; it needs no sandbox here.
(cd "$work" && with_apt_lock apt-get "${apt_options[@]}" -qq -o APT::Sandbox::User=root download $packages)
mkdir "$work/root"
for deb in "$work"/*.deb; do
    dpkg -x "$deb" "$work/root"
done

# ejabberdctl's ERL_LIBS='/usr/lib/<arch>' becomes the unpacked ones.
ejabberdctl=$work/root/usr/sbin/ejabberdctl
sed -i "s|^ERL_LIBS='\(/usr/lib/[^':]*\)'\$|ERL_LIBS='$root\1:$root/usr/lib/erlang/lib'|" "$ejabberdctl"
grep -q "^ERL_LIBS='$root/" "$ejabberdctl" || fail "ejabberdctl $release sets ERL_LIBS differently than expected"
echo "$packages" > "$work/root/.unpacked"

rm -rf "$root"
mv "$work/root" "$root"
echo "backports.sh: ejabberd $release unpacked in $root"
