#!/usr/bin/env python3
"""Checks mod_apush_bridge against a real Prosody (0.12 or 13.0) with mod_cloud_notify.

Starts Prosody from a temporary directory on free loopback ports, connects a fake apush component
(XEP-0114) that logs what it receives and answers every IQ set with a result, and plays alice's
phone and desktop and bob as plain c2s clients (SASL PLAIN, no TLS). Python 3 standard library only.

    python3 contrib/prosody/test/bridge_test.py [--release 0.12|13] [--keep] [--verbose]

--keep leaves the temporary directory (config, logs, the component's capture) for inspection.
Exits non-zero on the first failed check. Needs, for 0.12 (the default), `prosody` and `prosodyctl` on
PATH (Debian: prosody, prosody-modules); for 13, the ones contrib/prosody/backports.sh unpacks. May run
as root (the config sets run_as_root).
"""

import argparse
import os
import re
import shutil
import socket
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_DIR = os.path.dirname(HERE)
# Where each release's prosody and prosodyctl are ("" for PATH).
RELEASE_BIN = {"0.12": "", "13": "/opt/apush-backports/prosody-13/usr/bin/"}
sys.path.insert(0, os.path.join(os.path.dirname(MODULE_DIR), "bridge-test"))
import bridge_wire  # noqa: E402
from bridge_wire import (ACTIVITY_INTERVAL, COMPONENT, DOMAIN, NS_BRIDGE, NS_CLIENT, NS_COMPONENT, NS_FORWARD, NS_PUBSUB, NS_STANZAS, Component, Stream, PASSWORD, SECRET, USERS, Client,  # noqa: E402
                         check, enable, free_port, q, refusal, run_checks, scenarios, session_scenarios,
                         wait_for_port)


def write_config(base, c2s_port, component_port):
    config = f"""
run_as_root = true
pidfile = "{base}/prosody.pid"; data_path = "{base}/data"; certificates = "{base}/certs"
plugin_paths = {{ "{MODULE_DIR}" }}
log = {{ debug = "{base}/prosody.log"; error = "{base}/prosody.err" }}
interfaces = {{ "127.0.0.1" }}; c2s_ports = {{ {c2s_port} }}
component_ports = {{ {component_port} }}; component_interfaces = {{ "127.0.0.1" }}
http_ports = {{}}; https_ports = {{}}; c2s_direct_tls_ports = {{}}; s2s_ports = {{}}
modules_enabled = {{ "roster"; "saslauth"; "disco"; "ping"; "carbons"; "mam"; "smacks"; "pep"; "offline"; "register"; "cloud_notify"; "admin_shell" }}
modules_disabled = {{ "s2s"; "s2s_auth_certs" }}
authentication = "internal_hashed"; storage = "internal"
c2s_require_encryption = false; allow_unencrypted_plain_auth = true
push_notification_with_sender = true

VirtualHost "{DOMAIN}"
  modules_enabled = {{ "apush_bridge" }}
  apush_bridge_component = "{COMPONENT}"
  apush_bridge_allowed_services = {{ "{COMPONENT}"; "push.allowed.example" }}
  apush_bridge_replay_max_count = 3; apush_bridge_replay_max_age = 8; apush_bridge_answer_timeout = 4
  apush_bridge_activity_interval = {ACTIVITY_INTERVAL}

Component "{COMPONENT}"
  component_secret = "{SECRET}"
"""
    path = os.path.join(base, "prosody.cfg.lua")
    with open(path, "w") as f:
        f.write(config)
    for sub in ("data", "certs"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    return path


def stored_nodes(base, user):
    """The nodes of the user's registrations in mod_cloud_notify's store (storage "internal": a Lua table
    per user, written at once on every change)."""
    path = os.path.join(base, "data", DOMAIN, "cloud_notify", f"{user}.dat")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return re.findall(r'\["node"\] = "([^"]*)"', f.read())


def prosody_scenarios(c2s_port, component_port, component, release, prosodyctl):
    """What is Prosody's own: mod_cloud_notify pushes for a hibernated session from the registration the
    session holds, not from its store; prosodyctl deluser is reported on 13.0 only."""
    def refused_while_held():
        tablet = Client(c2s_port, "carol", "tablet")
        tablet.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>")
        tablet.expect(lambda e: e.tag == "{urn:xmpp:sm:3}enabled", "stream management")
        assert tablet.iq("set", enable(COMPONENT, "tokHeld")).get("type") == "result"
        component.bridge_message("registered")
        component.send(refusal(f"carol@{DOMAIN}", "tokHeld"))
        time.sleep(0.5)
        tablet.sock.shutdown(socket.SHUT_RDWR)  # no </stream:stream>: the session hibernates
        tablet.sock.close()
        time.sleep(1.0)
        bob = Client(c2s_port, "bob", "desk")
        bob.send(f"<message to='carol@{DOMAIN}/tablet' type='chat' id='h1'><body>to the tablet</body></message>")
        nodes = {iq.find(f"{q(NS_PUBSUB, 'pubsub')}/{q(NS_PUBSUB, 'publish')}").get("node")
                 for iq in component.collect(2.5) if iq.tag == q(NS_COMPONENT, "iq") and iq.get("type") == "set"}
        assert "tokHeld" not in nodes, nodes
        bob.close()
    check("a refused registration is not pushed to for the session that made it, once it hibernates",
          refused_while_held)

    def deleted_with_prosodyctl():
        prosodyctl("register", "ctl", DOMAIN, PASSWORD)
        prosodyctl("deluser", f"ctl@{DOMAIN}")
        reports = [m.find(q(NS_BRIDGE, "unregistered")) for m in component.collect(1.5)
                   if m.tag == q(NS_COMPONENT, "message")]
        accounts = [r.get("account") for r in reports if r is not None]
        # 13.0's deluser asks the running server (mod_admin_shell); 0.12's changes the store behind it.
        assert accounts == ([f"ctl@{DOMAIN}"] if release == "13" else []), accounts
    check("prosodyctl deluser is reported as <unregistered/> on 13.0, and goes unheard on 0.12",
          deleted_with_prosodyctl)
    return replay_scenarios(c2s_port, component_port, component, prosodyctl)


def replay_scenarios(c2s_port, component_port, component, prosodyctl):
    """The bridge keeps each publish until the component answers it and replays it (same id) after a
    wait/resource-constraint, a bounce while the component is away, or no answer; bounded and aged."""
    prosodyctl("register", "dave", DOMAIN, PASSWORD)
    phone = Client(c2s_port, "dave", "phone")
    assert phone.iq("set", enable(COMPONENT, "tokDave")).get("type") == "result"
    component.bridge_message("registered")
    phone.close()
    bob = Client(c2s_port, "bob", "replay")
    time.sleep(0.3)
    current = [component]

    def raw_publish(timeout=5.0):
        return Stream.expect(current[0], lambda e: e.tag == q(NS_COMPONENT, "iq") and e.get("type") == "set",
                             "a publish", timeout)

    def answer(iq, error=None):
        body = f"<error type='wait'><{error} xmlns='{NS_STANZAS}'/></error>" if error else ""
        current[0].send(f"<iq type='{'error' if error else 'result'}' id='{iq.get('id')}' from='{COMPONENT}' "
                        f"to='{DOMAIN}'>{body}</iq>")

    def message_id(iq):
        return iq.find(f".//{q(NS_FORWARD, 'forwarded')}/{q(NS_CLIENT, 'message')}").get("id")

    def send(n):
        bob.send(f"<message to='dave@{DOMAIN}' type='chat' id='r{n}'><body>number {n}</body></message>")

    def wait_is_replayed():
        send(1)
        first = raw_publish()
        answer(first, "resource-constraint")
        again = raw_publish()
        assert again.get("id") == first.get("id") and message_id(again) == "r1", again.attrib
        answer(again)
        current[0].expect_nothing(2.5, "a publish answered result")
    check("a publish answered wait/resource-constraint is sent again, same id, until answered result", wait_is_replayed)

    def unanswered_is_replayed():
        send(2)
        first = raw_publish()
        again = raw_publish(timeout=8.0)  # never answered: sent again after the answer timeout
        assert again.get("id") == first.get("id"), again.attrib
        answer(again)
        current[0].expect_nothing(6.0, "a publish answered result")
    check("a publish not answered within the timeout is sent again", unanswered_is_replayed)

    def replayed_after_reconnect():
        current[0].close()
        time.sleep(0.5)
        for n in (3, 4, 5):
            send(n)
            time.sleep(0.2)
        current[0] = Component(component_port)
        replays = [raw_publish() for _ in range(3)]
        assert [message_id(iq) for iq in replays] == ["r3", "r4", "r5"], [message_id(iq) for iq in replays]
        for iq in replays:
            answer(iq)
        current[0].expect_nothing(6.0, "a replay answered result")
    check("publishes bounced while the component is away are replayed on reconnect, oldest first, once",
          replayed_after_reconnect)

    def oldest_dropped_when_full():
        current[0].close()
        time.sleep(0.5)
        for n in (6, 7, 8, 9):  # the queue holds 3
            send(n)
            time.sleep(0.2)
        current[0] = Component(component_port)
        replays = [raw_publish() for _ in range(3)]
        assert [message_id(iq) for iq in replays] == ["r7", "r8", "r9"], [message_id(iq) for iq in replays]
        for iq in replays:
            answer(iq)
        current[0].expect_nothing(6.0, "a replay answered result")
        send(10)  # the server still pushes
        fresh = raw_publish()
        assert message_id(fresh) == "r10"
        answer(fresh)
    check("at the queue's bound the oldest is dropped and the server keeps pushing", oldest_dropped_when_full)

    def aged_out():
        current[0].close()
        time.sleep(0.5)
        send(11)
        time.sleep(9.5)  # past apush_bridge_replay_max_age
        send(12)
        time.sleep(0.3)
        current[0] = Component(component_port)
        replay = raw_publish()
        assert message_id(replay) == "r12", message_id(replay)
        answer(replay)
        current[0].expect_nothing(3.0, "a push older than the queue's age bound")
    check("a kept push older than the age bound is dropped, not replayed; a younger one is", aged_out)
    bob.close()
    return current[0]


def module_log_errors(base):
    """Error lines about the module or Lua tracebacks (missing certificates are expected noise)."""
    lines = []
    for name in ("prosody.err", "prosody.log"):
        path = os.path.join(base, name)
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                lines += [l for l in f if "\terror\t" in l and ("apush" in l or "traceback" in l.lower())]
    return "".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", choices=RELEASE_BIN, default="0.12", help="which Prosody")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--verbose", action="store_true", help="print every stanza")
    args = parser.parse_args()
    bridge_wire.VERBOSE = args.verbose
    binaries = RELEASE_BIN[args.release]

    base = tempfile.mkdtemp(prefix="apush-bridge-")
    c2s_port, component_port = free_port(), free_port()
    config = write_config(base, c2s_port, component_port)
    def prosodyctl(*arguments):
        subprocess.run([binaries + "prosodyctl", "--config", config, *arguments],
                       check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    def register(user):
        prosodyctl("register", user, DOMAIN, PASSWORD)
    for user in USERS:
        register(user)
    prosody = subprocess.Popen([binaries + "prosody", "--config", config, "-F"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(c2s_port, prosody, "Prosody")
        wait_for_port(component_port, prosody, "Prosody")
        def checks(component):
            scenarios(c2s_port, component, register, lambda user: stored_nodes(base, user))
            session_scenarios(c2s_port, component, register)
            return prosody_scenarios(c2s_port, component_port, component, args.release, prosodyctl)
        return run_checks(base, component_port, checks)
    finally:
        prosody.send_signal(signal.SIGTERM)
        try:
            prosody.wait(timeout=5)
        except subprocess.TimeoutExpired:
            prosody.kill()
        module_errors = module_log_errors(base)
        if module_errors:
            print("Prosody logged errors about the module:\n" + module_errors)
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
