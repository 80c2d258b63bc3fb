#!/usr/bin/env bash
# Compiles mod_apush_bridge for ejabberd, or lays it out as a source package for ejabberd's
# contrib mechanism (`ejabberdctl module_install`).
#
#   build.sh [--root ROOT] [--ejabberd DIR] [--xmpp DIR] OUTDIR    writes OUTDIR/*.beam
#   build.sh --package SOURCES_DIR                                 writes SOURCES_DIR/mod_apush_bridge/
#   build.sh [--root ROOT] [--ejabberd DIR] [--xmpp DIR] --test    builds with test/, runs its eunit tests
#
# DIR defaults: Debian's package (/usr/lib/<arch>/ejabberd-<version>, holding ebin/ and include/)
# and the xmpp library beside it or in Erlang's lib directory, found under ROOT (default /): e.g.
# --root /opt/apush-backports/ejabberd-24 builds against ejabberd 24.12 as
# contrib/ejabberd/backports.sh unpacks it. For an ejabberd built from source, give its lib
# directories, e.g.
#   build.sh --ejabberd /opt/ejabberd/lib/ejabberd-23.01 --xmpp /opt/ejabberd/lib/xmpp-1.6.1 out
# (or set EJABBERD_DIR and XMPP_DIR; ERLC_FLAGS adds compiler flags, e.g. +warnings_as_errors).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sources=(mod_apush_bridge.erl mod_apush_bridge_stanza.erl mod_apush_bridge_replay.erl)
root=
ejabberd_dir=${EJABBERD_DIR:-}
xmpp_dir=${XMPP_DIR:-}
package_into=
outdir=
run_tests=

fail() { echo "build.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case $1 in
        --root) root=${2:?--root needs a directory}; shift 2 ;;
        --ejabberd) ejabberd_dir=${2:?--ejabberd needs a directory}; shift 2 ;;
        --xmpp) xmpp_dir=${2:?--xmpp needs a directory}; shift 2 ;;
        --package) package_into=${2:?--package needs a directory}; shift 2 ;;
        --test) run_tests=1; shift ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        -*) fail "unknown option $1 (see --help)" ;;
        *) [ -z "$outdir" ] || fail "one output directory only"; outdir=$1; shift ;;
    esac
done

if [ -n "$package_into" ]; then
    # The layout ext_mod installs from: the spec, src/, conf/ (merged into the server's config
    # when installed), and the README and licence it checks for.
    package="$package_into/mod_apush_bridge"
    mkdir -p "$package/src" "$package/conf"
    cp "${sources[@]/#/$here/}" "$package/src/"
    cp "$here/mod_apush_bridge.spec" "$package/"
    cp "$here/conf/mod_apush_bridge.yml" "$package/conf/"
    cp "$here/README.md" "$package/README.txt"
    cp "$here/COPYING" "$package/COPYING"
    echo "$package"
    exit 0
fi

if [ -n "$run_tests" ]; then
    [ -z "$outdir" ] || fail "--test builds into a directory of its own"
    outdir=$(mktemp -d)
    trap 'rm -rf "$outdir"' EXIT
    sources+=(test/mod_apush_bridge_stanza_tests.erl test/mod_apush_bridge_tests.erl test/mod_apush_bridge_replay_tests.erl)
    ERLC_FLAGS="${ERLC_FLAGS:-} +warnings_as_errors"
fi
[ -n "$outdir" ] || fail "no output directory given (see --help)"
command -v erlc >/dev/null || fail "erlc is missing: apt-get install erlang-dev (or ejabberd, which brings it)"

if [ -z "$ejabberd_dir" ]; then
    for candidate in "$root"/usr/lib/*/ejabberd-* "$root"/usr/lib/ejabberd-* "$root"/usr/lib/erlang/lib/ejabberd-*; do
        if [ -f "$candidate/ebin/gen_mod.beam" ] && [ -d "$candidate/include" ]; then
            ejabberd_dir=$candidate; break
        fi
    done
    [ -n "$ejabberd_dir" ] || fail "no ejabberd found: apt-get install ejabberd, or give --ejabberd DIR"
fi
[ -f "$ejabberd_dir/ebin/gen_mod.beam" ] || fail "$ejabberd_dir has no ebin/gen_mod.beam: not an ejabberd lib directory"
if [ -z "$xmpp_dir" ]; then
    for candidate in "$(dirname "$ejabberd_dir")"/xmpp-* "$root"/usr/lib/erlang/lib/p1_xmpp-* "$root"/usr/lib/erlang/lib/xmpp-*; do
        if [ -f "$candidate/include/xmpp.hrl" ]; then xmpp_dir=$candidate; break; fi
    done
    [ -n "$xmpp_dir" ] || fail "no xmpp library (xmpp.hrl) found: give --xmpp DIR"
fi
[ -f "$xmpp_dir/include/xmpp.hrl" ] || fail "$xmpp_dir has no include/xmpp.hrl"

mkdir -p "$outdir"
# -pa lets erlc check the gen_mod behaviour; the lib directory above the xmpp library resolves
# xmpp.hrl's include_lib of fast_xml's header.
erlc -o "$outdir" -I "$ejabberd_dir/include" -I "$xmpp_dir/include" -I "$(dirname "$xmpp_dir")" \
    -pa "$ejabberd_dir/ebin" -pa "$xmpp_dir/ebin" +debug_info ${ERLC_FLAGS:-} \
    "${sources[@]/#/$here/}"

if [ -n "$run_tests" ]; then
    modules=$(for source in "${sources[@]}"; do basename "$source" .erl; done | grep '_tests$' | paste -sd, -)
    erl -noshell -pa "$outdir" -pa "$ejabberd_dir/ebin" -pa "$xmpp_dir/ebin" -eval "
        case eunit:test([$modules], [verbose]) of
            ok -> halt(0);
            _ -> halt(1)
        end."
fi
