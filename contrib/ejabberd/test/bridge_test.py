#!/usr/bin/env python3
"""Checks mod_apush_bridge against a real ejabberd (23.01, or 24.12 with --root) with mod_push.

Starts a private ejabberd (its own Erlang node, cookie and ports, loopback only) from a temporary
directory, connects a fake apush component (XEP-0114) that records what it receives, and runs the
scenarios every bridge must pass (contrib/bridge-test/bridge_wire.py), then what is ejabberd's own:
a component that is away costs no registration, and a hibernated session's pushes name the account.

    python3 contrib/ejabberd/test/bridge_test.py [--install contrib|code-path] [--root ROOT] [--keep] [--verbose]

--install contrib installs the module the way an operator would with ejabberd's contrib mechanism
(build.sh --package, then `ejabberdctl module_install`); code-path (the default) builds it with
build.sh and loads it from ejabberd's code path. --root runs the ejabberd unpacked there (ejabberd
24.12: --root /opt/apush-backports/ejabberd-24, from contrib/ejabberd/backports.sh) and builds the
module against it; without it, the installed one (Debian bookworm's 23.01). Exits non-zero on the first failed check. Needs
ejabberd (Debian: ejabberd, erlang-dev) and may run as root.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_DIR = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(os.path.dirname(MODULE_DIR), "bridge-test"))
import bridge_wire  # noqa: E402
from bridge_wire import (ACTIVITY_INTERVAL, COMPONENT, DOMAIN, NS_BRIDGE, NS_CLIENT, NS_COMPONENT, NS_FORWARD,  # noqa: E402
                         NS_PUSH, NS_STANZAS, PASSWORD, SECRET, USERS, Client, Component, Stream, check, enable,
                         forwarded_message, free_port, q, run_checks, scenarios, session_scenarios, wait_for_port)


ALLOWED_SERVICES = f'["{COMPONENT}", "push.allowed.example"]'


class Ejabberd:
    """A private ejabberd, driven with ejabberdctl and stopped by the PID in its pid file."""

    def __init__(self, base, install, root):
        self.base, self.install, self.root = base, install, root
        self.ejabberdctl = os.path.join(root, "usr/sbin/ejabberdctl") if root else "ejabberdctl"
        self.c2s_port, self.component_port, self.dist_port = free_port(), free_port(), free_port()
        self.cookie = f"bridge{os.getpid()}"
        for sub in ("spool", "logs", "ebin", "contrib/sources"):
            os.makedirs(os.path.join(base, sub), exist_ok=True)
        code_path = f" -pa {base}/ebin" if install == "code-path" else ""
        with open(os.path.join(base, "ejabberdctl.cfg"), "w") as f:
            f.write(f"""ERLANG_NODE=apushbridge{os.getpid()}@localhost
ERL_OPTIONS="-setcookie {self.cookie}{code_path}"
ERL_DIST_PORT={self.dist_port}
INET_DIST_INTERFACE=127.0.0.1
EXEC_CMD=as_current_user
SPOOL_DIR={base}/spool
LOGS_DIR={base}/logs
EJABBERD_PID_PATH={base}/ejabberd.pid
CONTRIB_MODULES_PATH={base}/contrib
""")
        open(os.path.join(base, "inetrc"), "w").close()
        self.write_config(with_module=install == "code-path")

    def write_config(self, with_module):
        module = f"""  mod_apush_bridge:
    apush_bridge_component: "{COMPONENT}"
    apush_bridge_allowed_services: {ALLOWED_SERVICES}
    apush_bridge_activity_interval: {ACTIVITY_INTERVAL}
""" if with_module else ""
        with open(os.path.join(self.base, "ejabberd.yml"), "w") as f:
            f.write(f"""hosts: ["{DOMAIN}"]
loglevel: info
auth_password_format: plain
listen:
  - port: {self.c2s_port}
    ip: "127.0.0.1"
    module: ejabberd_c2s
    starttls: false
    max_stanza_size: 262144
  - port: {self.component_port}
    ip: "127.0.0.1"
    module: ejabberd_service
    hosts:
      "{COMPONENT}":
        password: "{SECRET}"
modules:
  mod_disco: {{}}
  mod_roster: {{}}
  mod_ping: {{}}
  mod_caps: {{}}
  mod_carboncopy: {{}}
  mod_stream_mgmt: {{}}
  mod_offline: {{}}
  mod_mam: {{db_type: mnesia, default: always}}
  mod_pubsub: {{plugins: [flat, pep]}}
  mod_push: {{include_sender: true}}
  mod_register: {{}}
{module}""")

    def ctl(self, *args, check=True):
        command = [self.ejabberdctl, "--config-dir", self.base, "--spool", f"{self.base}/spool",
                   "--logs", f"{self.base}/logs", *args]
        result = subprocess.run(command, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise RuntimeError(f"ejabberdctl {' '.join(args)} exited {result.returncode}: {result.stdout}{result.stderr}")
        return result.stdout

    def start(self):
        build = [os.path.join(MODULE_DIR, "build.sh")] + (["--root", self.root] if self.root else [])
        if self.install == "code-path":
            subprocess.run(build + [f"{self.base}/ebin"], check=True)
        self.process = subprocess.Popen(
            [self.ejabberdctl, "--config-dir", self.base, "--spool", f"{self.base}/spool", "--logs", f"{self.base}/logs",
             "foreground"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for_port(self.c2s_port, self.process, "ejabberd", timeout=60)
        wait_for_port(self.component_port, self.process, "ejabberd", timeout=60)
        deadline = time.monotonic() + 30
        while self.ctl("status", check=False).find("is running") < 0:
            if time.monotonic() > deadline:
                raise RuntimeError("ejabberd did not report started")
            time.sleep(0.2)
        for user in USERS:
            self.ctl("register", user, DOMAIN, PASSWORD)
        if self.install == "contrib":
            subprocess.run(build + ["--package", f"{self.base}/contrib/sources"], check=True, stdout=subprocess.DEVNULL)
            conf = f"{self.base}/contrib/sources/mod_apush_bridge/conf/mod_apush_bridge.yml"
            with open(conf) as f:
                text = f.read().replace("apush.example.org", COMPONENT).replace(
                    "apush_bridge_allowed_services: []", f"apush_bridge_allowed_services: {ALLOWED_SERVICES}\n"
                    f"    apush_bridge_activity_interval: {ACTIVITY_INTERVAL}")
            with open(conf, "w") as f:
                f.write(text)
            output = self.ctl("module_install", "mod_apush_bridge")
            assert "installed" in output, output
            assert "mod_apush_bridge" in self.ctl("modules_installed"), "module_install did not install it"

    def stored_nodes(self, user):
        """The nodes of the user's registrations in mod_push's store (Mnesia), asked of the node itself."""
        query = (f'{{ok, Sessions}} = mod_push_mnesia:lookup_sessions(<<"{user}">>, <<"{DOMAIN}">>), '
                 '[binary_to_list(Node) || {_, _, Node, _} <- Sessions].\n')
        result = subprocess.run(["erl_call", "-address", f"127.0.0.1:{self.dist_port}", "-c", self.cookie, "-e"],
                                input=query, capture_output=True, text=True, check=True)
        assert result.stdout.startswith("{ok,"), result.stdout + result.stderr
        return re.findall(r'"([^"]*)"', result.stdout)

    def stop(self):
        """SIGTERM to the node by the PID in its pid file (ejabberdctl foreground returns first), then waits."""
        pid_file = os.path.join(self.base, "ejabberd.pid")
        pid = int(open(pid_file).read().strip()) if os.path.exists(pid_file) else None
        if pid:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pid = None
        deadline = time.monotonic() + 20
        while pid and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
                time.sleep(0.1)
            except ProcessLookupError:
                break
        else:
            if pid:
                os.kill(pid, 9)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def module_errors(self):
        lines = []
        for name in ("error.log", "ejabberd.log"):
            path = os.path.join(self.base, "logs", name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    lines += [l for l in f if "[error]" in l and "apush" in l]
        return "".join(lines)


def ejabberd_scenarios(server, component):
    """What ejabberd adds to the contract: it deletes a registration when it cannot reach the
    component, and it pushes for every stanza a hibernated session is sent; what the bridge adds:
    publishes held back while the component is away, or answered wait, are sent again."""
    phone = Client(server.c2s_port, "alice", "phone")
    assert phone.iq("set", enable(COMPONENT, "tokAway")).get("type") == "result"
    component.bridge_message("registered")
    phone.close()
    bob = Client(server.c2s_port, "bob", "laptop")

    reconnected = []

    def away():
        component.close()
        time.sleep(0.5)
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='away1'><body>while away</body></message>")
        laptop = Client(server.c2s_port, "alice", "laptop")
        assert laptop.iq("set", enable(COMPONENT, "tokWhileAway")).get("type") == "result"
        laptop.close()
        time.sleep(1.0)
        back = Component(server.component_port)
        registered = back.bridge_message("registered")
        assert registered.find(q(NS_PUSH, "enable")).get("node") == "tokWhileAway", registered.attrib
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='back1'><body>after return</body></message>")
        pushes = []
        for _ in range(3):
            node, notification, _ = back.publish()
            pushes.append((node, forwarded_message(notification, "true").get("id")))
        # The push held back while the component was away is sent once it is back (replayed).
        assert sorted(pushes) == [("tokAway", "away1"), ("tokAway", "back1"), ("tokWhileAway", "back1")], pushes
        back.expect_nothing(2.5, "a push sent once")
        reconnected.append(back)
    check("a component that is away costs no registration: reported when it is back, its pushes sent then",
          away)
    component = reconnected[0]

    def hibernated():
        tablet = Client(server.c2s_port, "alice", "tablet")
        tablet.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>")
        tablet.expect(lambda e: e.tag == "{urn:xmpp:sm:3}enabled", "stream management")
        assert tablet.iq("set", enable(COMPONENT, "tokTablet")).get("type") == "result"
        component.bridge_message("registered")
        tablet.sock.close()  # no </stream:stream>: the session waits for resumption
        time.sleep(1.0)
        bob.send(f"<message to='alice@{DOMAIN}/tablet' type='chat' id='hib1'><body>to the tablet</body></message>")
        deadline = time.monotonic() + 5
        while True:
            node, notification, _ = component.publish()
            assert notification.find(q(NS_BRIDGE, "account")).get("jid") == f"alice@{DOMAIN}"
            forwarded = notification.find(f"{q(NS_FORWARD, 'forwarded')}/{{jabber:client}}message")
            if node == "tokTablet" and forwarded is not None and forwarded.get("id") == "hib1":
                return
            assert time.monotonic() < deadline, "no push for the hibernated tablet"
    check("a hibernated session's pushes name the account and carry the stanza", hibernated)

    def wait_is_replayed():
        server.ctl("register", "dave", DOMAIN, PASSWORD)
        phone = Client(server.c2s_port, "dave", "phone")
        assert phone.iq("set", enable(COMPONENT, "tokDave")).get("type") == "result"
        component.bridge_message("registered")
        phone.close()
        time.sleep(0.5)

        def raw_publish():
            return Stream.expect(component, lambda e: e.tag == q(NS_COMPONENT, "iq") and e.get("type") == "set",
                                 "a publish")

        def message_id(iq):
            return iq.find(f".//{q(NS_FORWARD, 'forwarded')}/{q(NS_CLIENT, 'message')}").get("id")

        bob.send(f"<message to='dave@{DOMAIN}' type='chat' id='w1'><body>while the store is away</body></message>")
        first = raw_publish()
        component.send(f"<iq type='error' id='{first.get('id')}' from='{COMPONENT}' to='{DOMAIN}'>"
                       f"<error type='wait'><resource-constraint xmlns='{NS_STANZAS}'/></error></iq>")
        again = raw_publish()
        assert again.get("id") == first.get("id") and message_id(again) == "w1", again.attrib
        component.send(f"<iq type='result' id='{again.get('id')}' from='{COMPONENT}' to='{DOMAIN}'/>")
        component.expect_nothing(2.5, "a publish answered result")
        assert "tokDave" in server.stored_nodes("dave"), "the registration was kept"
    check("a publish answered wait/resource-constraint is sent again, same id, until answered result",
          wait_is_replayed)

    def disable_everything():
        desktop = Client(server.c2s_port, "alice", "desktop")
        assert desktop.iq("set", f"<disable xmlns='{NS_PUSH}' jid='{COMPONENT}'/>").get("type") == "result"
        component.bridge_message("unregistered")
        desktop.close()
    check("the account's registrations are removed at the end", disable_everything)
    bob.close()
    return component


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", choices=("code-path", "contrib"), default="code-path")
    parser.add_argument("--root", default="", help="the root ejabberd is unpacked in (default: the installed one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--verbose", action="store_true", help="print every stanza")
    args = parser.parse_args()
    bridge_wire.VERBOSE = args.verbose

    base = tempfile.mkdtemp(prefix="apush-ejabberd-bridge-")
    server = Ejabberd(base, args.install, args.root)
    def checks(component):
        scenarios(server.c2s_port, component, lambda user: server.ctl("register", user, DOMAIN, PASSWORD),
                  server.stored_nodes)
        session_scenarios(server.c2s_port, component, lambda user: server.ctl("register", user, DOMAIN, PASSWORD))
        return ejabberd_scenarios(server, component)

    try:
        server.start()
        print(f"ejabberd {args.root or '(installed)'} with the bridge loaded through {args.install}")
        return run_checks(base, server.component_port, checks)
    finally:
        server.stop()
        module_errors = server.module_errors()
        if module_errors:
            print("ejabberd logged errors about the module:\n" + module_errors)
        if args.keep:
            print(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
