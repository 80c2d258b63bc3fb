#!/usr/bin/env python3
"""Runs every ad-hoc command of apush-component as an app written with slixmpp would (issue 21).

It logs in as a user and as an operator, and drives each command through slixmpp's own xep_0050 client
API (start_command, continue_command, complete_command, cancel_command), answering each stage with the
stage's form turned around by Form.reply(). It checks what comes back (values, labels, what a removal
removed, XEP-0050's error conditions), not only that nothing failed. An answer that never reaches the
command's session (an error without the echoed <command/>) is a check that fails after a timeout.

    commands_slixmpp.py --port 5222 --domain localhost --component apush.localhost \
        --user alice@localhost --user-password pw --operator carol@localhost --operator-password pw

The user has exactly two push registrations when it starts. Prints one line per check; exits 1 when
any failed. CommandsSlixmppEndToEndTests runs it against a real Prosody and the component.
"""

import argparse
import asyncio
import copy
import logging
import sys

from slixmpp import ClientXMPP
from slixmpp.exceptions import IqError, IqTimeout
from slixmpp.plugins.xep_0004 import Form

COMMANDS = "http://jabber.org/protocol/commands"
NODE = "urn:xmpp:apush:0#"
STANZAS = "urn:ietf:params:xml:ns:xmpp-stanzas"
USER_NODES = {NODE + name for name in ["registrations", "policy", "test"]}
OPERATOR_NODES = USER_NODES | {
    NODE + name
    for name in ["admin-registrations", "admin-remove", "admin-policy", "admin-stats", "admin-prune-accounts"]
}
ANSWER_TIMEOUT = 10

results = []


def check(name, condition, detail=""):
    results.append(bool(condition))
    print(("ok   " if condition else "FAIL ") + name + ("" if condition or not detail else ": " + str(detail)))
    sys.stdout.flush()
    return bool(condition)


class Stage:
    """One answer to a command request, as the app's session handler got it."""

    def __init__(self, iq, session):
        self.iq = iq
        self.session = session
        command = iq["command"]
        self.status = command["status"]
        self.sessionid = command["sessionid"]
        self.notes = [text for _, text in command["notes"]]
        self.actions = set(command["actions"])
        has_form = command.xml.find("{jabber:x:data}x") is not None
        self.form = command["form"] if has_form else None
        self.error = iq["error"] if iq["type"] == "error" else None

    @property
    def condition(self):
        return self.error["condition"] if self.error is not None else None

    @property
    def command_condition(self):
        """XEP-0050's own condition (bad-payload, bad-action, session-expired, …), if any."""
        if self.error is None:
            return None
        for child in self.error.xml:
            if child.tag.startswith("{" + COMMANDS + "}"):
                return child.tag.split("}")[1]
        return None

    def describe(self):
        if self.error is not None:
            return "error %s/%s %s (%s)" % (
                self.error["type"], self.condition, self.command_condition or "", self.error["text"])
        return "%s, notes %s" % (self.status, self.notes)

    def reply(self, values=None):
        """This stage's form, turned into the submission an app sends (Form.reply()), with `values`."""
        form = Form(xml=copy.deepcopy(self.form.xml))
        for var, value in (values or {}).items():
            form.field[var]["value"] = value
        form.reply()
        return form

    def visible_fields(self):
        return [f for f in self.form.xml.findall("{jabber:x:data}field") if f.get("type") != "hidden"]


class App:
    """A logged-in client and the commands it runs through slixmpp's xep_0050 workflow."""

    def __init__(self, jid, password, args):
        self.component = args.component
        # The test servers run without TLS. There ejabberd 24.12 refuses SCRAM with the "y" flag (the
        # client could bind a channel, and thinks the server cannot) as a downgrade: "Invalid channel
        # binding" (RFC 5802 §6). PLAIN, as the project's own test client logs in.
        self.client = ClientXMPP(jid, password, sasl_mech="PLAIN")
        self.client.enable_starttls = False
        self.client.enable_direct_tls = False
        self.client.enable_plaintext = True
        self.client.plugin["feature_mechanisms"].unencrypted_plain = True
        self.client.plugin["feature_mechanisms"].unencrypted_scram = True
        for plugin in ["xep_0004", "xep_0030", "xep_0050"]:
            self.client.register_plugin(plugin)
        self.adhoc = self.client.plugin["xep_0050"]
        self.host, self.port = args.host, args.port

    async def login(self):
        started = asyncio.get_running_loop().create_future()
        self.client.add_event_handler("session_start", lambda _: started.done() or started.set_result(True))
        self.client.add_event_handler(
            "failed_auth", lambda _: started.done() or started.set_exception(RuntimeError("login failed")))
        self.client.connect(self.host, self.port)
        await asyncio.wait_for(started, 20)

    async def _answer(self, session, send):
        answered = asyncio.get_running_loop().create_future()

        def handler(iq, session):
            if not answered.done():
                answered.set_result(Stage(iq, session))

        session["next"] = handler
        session["error"] = handler
        send()
        try:
            return await asyncio.wait_for(answered, ANSWER_TIMEOUT)
        except asyncio.TimeoutError:
            return None

    async def start(self, node):
        session = {}
        return await self._answer(session, lambda: self.adhoc.start_command(self.component, node, session))

    async def go_on(self, stage, action, payload=None):
        """The next request of `stage`'s session: `complete`, `next`, `prev`, or `cancel`."""
        session = stage.session
        session["payload"] = payload
        if action == "complete":
            send = lambda: self.adhoc.complete_command(session)
        elif action == "cancel":
            send = lambda: self.adhoc.cancel_command(session)
        else:
            send = lambda: self.adhoc.continue_command(session, direction=action)
        return await self._answer(session, send)

    async def items(self):
        answer = await self.client.plugin["xep_0030"].get_items(jid=self.component, node=COMMANDS)
        return {item[1] for item in answer["disco_items"]["items"]}

    async def info_error(self, node):
        """The condition and type of the error disco#info of `node` gets, or None when it is answered."""
        try:
            await self.client.plugin["xep_0030"].get_info(jid=self.component, node=node)
            return None
        except IqError as error:
            return error.iq["error"]["condition"], error.iq["error"]["type"]


def answered(name, stage, status=None):
    """Checks that the stage reached the session (and has `status`); False if not, for the caller to stop."""
    if stage is None:
        return check(name, False, "no answer reached the command's session in %d s" % ANSWER_TIMEOUT)
    if status is not None:
        return check(name, stage.error is None and stage.status == status, stage.describe())
    return check(name, True)


def labelled(name, stage):
    """Every field a person sees has a label (fixed lines carry their text as their value)."""
    unlabelled = [
        f.get("var") for f in stage.visible_fields() if f.get("type") != "fixed" and not f.get("label")]
    reported = stage.form.xml.find("{jabber:x:data}reported")
    if reported is not None:
        unlabelled += ["reported " + f.get("var") for f in reported if not f.get("label")]
    check(name, not unlabelled, "fields without a label: %s" % unlabelled)


def no_untyped_readonly_lines(name, stage):
    """Read-only lines are `fixed` fields: a field without a var is nothing else (XEP-0004 §3.2)."""
    bad = [f.get("type") for f in stage.visible_fields() if f.get("var") is None and f.get("type") != "fixed"]
    check(name, not bad, "var-less fields of type %s" % bad)


def value(stage, var):
    field = stage.form.xml.find("{jabber:x:data}field[@var='%s']" % var)
    if field is None:
        return None
    values = [v.text or "" for v in field.findall("{jabber:x:data}value")]
    return values[0] if len(values) == 1 else values


def option_values(stage, var):
    field = stage.form.xml.find("{jabber:x:data}field[@var='%s']" % var)
    return [] if field is None else [o.findtext("{jabber:x:data}value") for o in field.findall("{jabber:x:data}option")]


async def user_checks(user, args):
    check("user sees the three user commands", await user.items() == USER_NODES, await user.items())

    # #policy: a refused stage reaches the session, then the corrected submission of the same session works.
    policy = await user.start(NODE + "policy")
    if not answered("#policy shows its form", policy, "executing"):
        return
    labelled("#policy: every field has a label", policy)
    first_id = policy.sessionid
    refused = await user.go_on(policy, "complete", policy.reply({"coalesce-seconds": "abc"}))
    if answered("#policy: coalesce-seconds=abc is refused and the error reaches the session", refused):
        check("#policy: the refusal is bad-request with bad-payload",
              (refused.condition, refused.command_condition) == ("bad-request", "bad-payload"), refused.describe())
        check("#policy: the refusal echoes the session id", refused.sessionid == first_id,
              "%r, not %r" % (refused.sessionid, first_id))
    wrong_action = await user.go_on(policy, "next", policy.reply({"coalesce-seconds": "5"}))
    if answered("#policy: next on a complete-only stage is answered", wrong_action):
        check("#policy: next on a complete-only stage is bad-action",
              (wrong_action.condition, wrong_action.command_condition) == ("bad-request", "bad-action"),
              wrong_action.describe())
    policy.session["id"] = first_id  # an app keeps the session's one id (XEP-0050 §3.3)
    saved = await user.go_on(policy, "complete", policy.reply({"coalesce-seconds": "7", "muted": ["bob@" + args.domain]}))
    if answered("#policy: the corrected submission of the same session completes", saved, "completed"):
        check("#policy: the completion keeps the session id", saved.sessionid == first_id, saved.sessionid)
    again = await user.start(NODE + "policy")
    if answered("#policy shows its form again", again, "executing"):
        check("#policy: the saved window is 7", value(again, "coalesce-seconds") == "7", value(again, "coalesce-seconds"))
        muted = value(again, "muted")
        check("#policy: the muted chat is saved", muted in ("bob@" + args.domain, ["bob@" + args.domain]), muted)
        await user.go_on(again, "cancel")

    # #registrations: remove one of the two through Form.reply() (its read-only lines come back untyped).
    listing = await user.start(NODE + "registrations")
    if not answered("#registrations shows its form", listing, "executing"):
        return
    labelled("#registrations: every field has a label", listing)
    no_untyped_readonly_lines("#registrations: read-only lines are fixed fields", listing)
    fingerprints = option_values(listing, "remove")
    check("#registrations offers both registrations", len(fingerprints) == 2, fingerprints)
    if len(fingerprints) != 2:
        return
    removed = await user.go_on(listing, "complete", listing.reply({"remove": [fingerprints[0]]}))
    if answered("#registrations: removing one completes", removed, "completed"):
        check("#registrations: it says one was removed", removed.notes == ["Removed 1 registration(s)."], removed.notes)
    after = await user.start(NODE + "registrations")
    if answered("#registrations shows its form after the removal", after, "executing"):
        check("#registrations: only the other registration is left",
              option_values(after, "remove") == fingerprints[1:], option_values(after, "remove"))
        await user.go_on(after, "cancel")
    args.kept_fingerprint = fingerprints[1]

    # #test: cancel, then submitting that session again is session-expired; a fresh one sends the push.
    test = await user.start(NODE + "test")
    if answered("#test shows its form", test, "executing"):
        labelled("#test: every field has a label", test)
        form = test.reply({"kind": "message"})
        bare = await user.go_on(test, "complete", None)
        if answered("#test: complete without the form, under the same session id, is answered", bare):
            check("#test: it asks for the form (bad-payload), and is no bad-sessionid",
                  bare.command_condition == "bad-payload" and bare.sessionid == test.sessionid, bare.describe())
        canceled = await user.go_on(test, "cancel")
        answered("#test: cancel is answered canceled", canceled, "canceled")
        late = await user.go_on(test, "complete", form)
        if answered("#test: a submission after cancel is answered", late):
            check("#test: a submission after cancel is session-expired",
                  late.command_condition == "session-expired" and late.error["type"] == "cancel"
                  and late.condition == "not-allowed", late.describe())
    test = await user.start(NODE + "test")
    if answered("#test shows its form again", test, "executing"):
        sent = await user.go_on(test, "complete", test.reply({"kind": "message"}))
        if answered("#test: a message test push completes", sent, "completed"):
            check("#test: it reached the kept registration",
                  any("Sent a message test push" in n and args.kept_fingerprint in n for n in sent.notes), sent.notes)

    # Operator commands are forbidden to a user (type cancel), to run and to disco#info.
    forbidden = await user.start(NODE + "admin-stats")
    if answered("user: #admin-stats is answered", forbidden):
        check("user: #admin-stats is forbidden, type cancel",
              (forbidden.condition, forbidden.error["type"]) == ("forbidden", "cancel"), forbidden.describe())
    check("user: disco#info of #admin-stats is forbidden",
          await user.info_error(NODE + "admin-stats") == ("forbidden", "cancel"),
          await user.info_error(NODE + "admin-stats"))


async def operator_checks(operator, args):
    check("operator sees every command", await operator.items() == OPERATOR_NODES, await operator.items())
    check("operator: disco#info of #admin-stats answers", await operator.info_error(NODE + "admin-stats") is None)

    # #admin-registrations: the table, its plain lines, and one registration in full.
    listing = await operator.start(NODE + "admin-registrations")
    if answered("#admin-registrations shows its form", listing, "executing"):
        labelled("#admin-registrations: every field has a label", listing)
        table = await operator.go_on(listing, "complete", listing.reply({"account": args.user}))
        if answered("#admin-registrations lists the user's registrations", table, "completed"):
            labelled("#admin-registrations: every column has a label", table)
            rows = table.form["items"]
            check("#admin-registrations: one registration is left", len(rows) == 1, len(rows))
            check("#admin-registrations: it is the kept one",
                  [row["fingerprint"] for row in rows] == [args.kept_fingerprint],
                  [row["fingerprint"] for row in rows])
            lines = [f.findtext("{jabber:x:data}value") for f in table.visible_fields() if f.get("type") == "fixed"]
            check("#admin-registrations: the table again as plain fixed lines",
                  len(lines) == 1 and args.kept_fingerprint in lines[0] and args.user in lines[0], lines)
    single = await operator.start(NODE + "admin-registrations")
    if answered("#admin-registrations shows its form again", single, "executing"):
        details = await operator.go_on(single, "complete", single.reply({"fingerprint": args.kept_fingerprint}))
        if answered("#admin-registrations shows one registration", details, "completed"):
            labelled("#admin-registrations: every detail has a label", details)
            check("#admin-registrations: the details name it and its account",
                  value(details, "fingerprint") == args.kept_fingerprint and value(details, "account") == args.user,
                  (value(details, "fingerprint"), value(details, "account")))

    # #admin-policy: three stages under one session id, a refused value, then the corrected one.
    whose = await operator.start(NODE + "admin-policy")
    if answered("#admin-policy asks whose policy", whose, "executing"):
        labelled("#admin-policy: every field of the first stage has a label", whose)
        first_id = whose.sessionid
        wrong = await operator.go_on(whose, "complete", whose.reply({"account": args.user}))
        if answered("#admin-policy: complete on a next-only stage is answered", wrong):
            check("#admin-policy: complete on a next-only stage is bad-action",
                  wrong.command_condition == "bad-action", wrong.describe())
        whose.session["id"] = first_id
        form = await operator.go_on(whose, "next", whose.reply({"account": args.user}))
        if answered("#admin-policy shows the user's policy", form, "executing"):
            labelled("#admin-policy: every field of the policy has a label", form)
            check("#admin-policy: the second stage keeps the session id", form.sessionid == first_id, form.sessionid)
            check("#admin-policy: it shows the user's window, 7", value(form, "coalesce-seconds") == "7",
                  value(form, "coalesce-seconds"))
            refused = await operator.go_on(form, "complete", form.reply({"coalesce-seconds": "abc"}))
            if answered("#admin-policy: coalesce-seconds=abc reaches the session", refused):
                check("#admin-policy: it is bad-payload with the session id",
                      refused.command_condition == "bad-payload" and refused.sessionid == first_id,
                      refused.describe() + " " + refused.sessionid)
            form.session["id"] = first_id
            saved = await operator.go_on(form, "complete", form.reply({"coalesce-seconds": "9"}))
            answered("#admin-policy: the corrected submission completes", saved, "completed")
            replay = await operator.go_on(form, "complete", form.reply({"coalesce-seconds": "11"}))
            if answered("#admin-policy: a completed session's form is answered", replay):
                check("#admin-policy: submitting a completed session again is session-expired",
                      replay.command_condition == "session-expired", replay.describe())

    # #admin-stats: every counter labelled, and the count of registrations right.
    stats = await operator.start(NODE + "admin-stats")
    if answered("#admin-stats completes", stats, "completed"):
        labelled("#admin-stats: every counter has a label", stats)
        check("#admin-stats: one registration", value(stats, "registrations") == "1", value(stats, "registrations"))

    # #admin-prune-accounts: the user's account exists, so nothing is pruned.
    prune = await operator.start(NODE + "admin-prune-accounts")
    if answered("#admin-prune-accounts asks for a domain", prune, "executing"):
        labelled("#admin-prune-accounts: every field has a label", prune)
        checked = await operator.go_on(prune, "next", prune.reply({"domain": args.domain}))
        if answered("#admin-prune-accounts checks the domain", checked, "completed"):
            check("#admin-prune-accounts: no account was deleted", any("none was deleted" in n for n in checked.notes),
                  checked.notes)

    # #admin-remove: the kept registration goes, and the user sees none left.
    remove = await operator.start(NODE + "admin-remove")
    if answered("#admin-remove asks what to remove", remove, "executing"):
        labelled("#admin-remove: every field has a label", remove)
        removed = await operator.go_on(remove, "complete", remove.reply({"fingerprint": args.kept_fingerprint}))
        if answered("#admin-remove removes it", removed, "completed"):
            check("#admin-remove: it says one was removed", removed.notes == ["Removed 1 registration(s)."],
                  removed.notes)
    stats = await operator.start(NODE + "admin-stats")
    if answered("#admin-stats completes again", stats, "completed"):
        check("#admin-stats: no registration is left", value(stats, "registrations") == "0",
              value(stats, "registrations"))


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--component", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--user-password", required=True)
    parser.add_argument("--operator", required=True)
    parser.add_argument("--operator-password", required=True)
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    args.kept_fingerprint = None

    user = App(args.user + "/slixmpp", args.user_password, args)
    operator = App(args.operator + "/slixmpp", args.operator_password, args)
    await user.login()
    await operator.login()
    await user_checks(user, args)
    if args.kept_fingerprint:
        await operator_checks(operator, args)
    else:
        check("operator checks ran", False, "the user's removal did not leave a registration to work with")
    for app in (user, operator):
        app.client.disconnect()
    failed = results.count(False)
    print("slixmpp checks: %d ok, %d failed" % (results.count(True), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
