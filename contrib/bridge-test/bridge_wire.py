"""The wire contract both server bridges keep with the apush component (their READMEs, under
contrib/prosody and contrib/ejabberd, describe it), checked against a real server: plain c2s clients (SASL PLAIN, no TLS), a fake
apush component (XEP-0114) that records what it receives and answers every IQ set with a result, and
the scenarios every bridge must pass. Python 3 standard library only.

Used by contrib/prosody/test/bridge_test.py and contrib/ejabberd/test/bridge_test.py, which start their
server and call `scenarios`.
"""

import base64
import hashlib
import os
import queue
import socket
import threading
import time
import xml.etree.ElementTree as ET

DOMAIN = "localhost"
# The accounts every server under test has at the start.
USERS = ("alice", "bob", "carol", "gone")
COMPONENT = "apush.localhost"
SECRET = "bridge-test-secret"
PASSWORD = "pw-for-tests"
# The bridges' activity interval under test (apush_bridge_activity_interval, activity_interval): at most
# one <active/> per account within it.
ACTIVITY_INTERVAL = 2

NS_STREAM = "http://etherx.jabber.org/streams"
NS_CLIENT = "jabber:client"
NS_COMPONENT = "jabber:component:accept"
NS_BRIDGE = "urn:xmpp:apush:bridge:0"
NS_PUSH = "urn:xmpp:push:0"
NS_FORWARD = "urn:xmpp:forward:0"
NS_PUBSUB = "http://jabber.org/protocol/pubsub"
NS_DATA = "jabber:x:data"
NS_MARKERS = "urn:xmpp:chat-markers:0"
NS_JMI = "urn:xmpp:jingle-message:0"
NS_MDS = "urn:xmpp:mds:displayed:0"
NS_EVENT = "http://jabber.org/protocol/pubsub#event"
NS_STANZAS = "urn:ietf:params:xml:ns:xmpp-stanzas"

for prefix, uri in {"": NS_CLIENT, "stream": NS_STREAM}.items():
    ET.register_namespace(prefix, uri)

VERBOSE = False


def q(ns, name):
    return "{%s}%s" % (ns, name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stream:
    """One XML stream over TCP; a reader thread turns it into a queue of stanzas (Elements)."""

    def __init__(self, port, name):
        self.name = name
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        # The timeout bounds the connect only: a stream may stay quiet for longer than that.
        self.sock.settimeout(None)
        self.stanzas = queue.Queue()
        self.header = queue.Queue()
        self._restart = threading.Event()
        self._parser = None
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def open(self, header):
        """Sends a stream header and returns the server's <stream:stream> attributes."""
        with self._lock:
            self._parser = ET.XMLPullParser(events=("start", "end"))
            self._depth = 0
        self.send(header)
        return self.header.get(timeout=5)

    def send(self, data):
        if VERBOSE:
            print(f"  {self.name} >> {data}")
        self.sock.sendall(data.encode())

    def close(self):
        try:
            self.send("</stream:stream>")
            self.sock.shutdown(socket.SHUT_WR)
            time.sleep(0.2)
        except OSError:
            pass
        self.sock.close()

    def _read(self):
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._parser.feed(data)
                for kind, element in self._parser.read_events():
                    if kind == "start":
                        self._depth += 1
                        if self._depth == 1:
                            self.header.put(dict(element.attrib))
                    else:
                        self._depth -= 1
                        if self._depth == 1:
                            if VERBOSE:
                                print(f"  {self.name} << {ET.tostring(element).decode()}")
                            self.stanzas.put(element)

    def expect(self, predicate, what, timeout=5.0):
        """The first stanza matching predicate; other stanzas received meanwhile are dropped."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.name}: timed out waiting for {what}")
            try:
                element = self.stanzas.get(timeout=left)
            except queue.Empty:
                continue
            if predicate(element):
                return element


class Client(Stream):
    def __init__(self, port, user, resource):
        super().__init__(port, f"{user}/{resource}")
        header = (f"<?xml version='1.0'?><stream:stream to='{DOMAIN}' version='1.0' "
                  f"xmlns='{NS_CLIENT}' xmlns:stream='{NS_STREAM}'>")
        self.open(header)
        self.expect(lambda e: e.tag == q(NS_STREAM, "features"), "features")
        plain = base64.b64encode(f"\0{user}\0{PASSWORD}".encode()).decode()
        self.send(f"<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>")
        answer = self.expect(lambda e: True, "SASL answer")
        assert answer.tag.endswith("}success"), f"{self.name}: authentication failed"
        self.open(header)
        self.expect(lambda e: e.tag == q(NS_STREAM, "features"), "features after auth")
        bound = self.iq("set", f"<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>{resource}</resource></bind>")
        assert bound.get("type") == "result", f"{self.name}: bind failed"
        self.send("<presence/>")

    def iq(self, kind, payload, to=None):
        self._id = getattr(self, "_id", 0) + 1
        iq_id = f"iq{self._id}"
        to_attr = f" to='{to}'" if to else ""
        self.send(f"<iq type='{kind}' id='{iq_id}'{to_attr}>{payload}</iq>")
        return self.expect(lambda e: e.tag == q(NS_CLIENT, "iq") and e.get("id") == iq_id, f"answer to {iq_id}")


def session_report(element):
    """The <presence/> or <active/> child of a bridge message reporting an account's sessions, else None."""
    if element.tag != q(NS_COMPONENT, "message"):
        return None
    return next((child for child in element if child.tag in (q(NS_BRIDGE, "presence"), q(NS_BRIDGE, "active"))),
                None)


class Component(Stream):
    """The fake apush component: records every stanza, answers IQ sets with a result. The bridge's
    reports of an account's sessions (<presence/>, <active/>) are set aside in `session_reports`, so
    the other checks see only registrations and pushes."""

    def __init__(self, port):
        super().__init__(port, COMPONENT)
        attrs = self.open(f"<stream:stream xmlns='{NS_COMPONENT}' xmlns:stream='{NS_STREAM}' to='{COMPONENT}'>")
        digest = hashlib.sha1((attrs["id"] + SECRET).encode()).hexdigest()
        self.send(f"<handshake>{digest}</handshake>")
        Stream.expect(self, lambda e: e.tag == q(NS_COMPONENT, "handshake"), "handshake")
        self.capture = []
        self.session_reports = []

    def _record(self, element):
        """Records and answers a stanza; True if it is a session report (set aside)."""
        self.capture.append(ET.tostring(element).decode())
        if element.tag == q(NS_COMPONENT, "iq") and element.get("type") == "set":
            self.send(f"<iq type='result' id='{element.get('id')}' from='{element.get('to')}' "
                      f"to='{element.get('from')}'/>")
        report = session_report(element)
        if report is not None:
            assert element.get("from") == DOMAIN and element.get("type") in (None, "normal"), element.attrib
            self.session_reports.append(report)
            return True
        return False

    def expect(self, predicate, what, timeout=5.0):
        return Stream.expect(self, lambda e: not self._record(e) and predicate(e), what, timeout)

    def expect_nothing(self, seconds, what):
        """Fails if any stanza but a session report arrives within seconds."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                element = self.stanzas.get(timeout=left)
            except queue.Empty:
                return
            if not self._record(element):
                raise AssertionError(f"{what}: unexpected {ET.tostring(element).decode()}")

    def next_session_report(self, what, timeout=5.0):
        """The oldest session report not yet taken, waiting for one (other stanzas meanwhile are dropped)."""
        deadline = time.monotonic() + timeout
        while not self.session_reports:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.name}: timed out waiting for {what}")
            try:
                self._record(self.stanzas.get(timeout=left))
            except queue.Empty:
                pass
        return self.session_reports.pop(0)

    def no_session_report(self, seconds, what):
        """Fails if the bridge reports any session within seconds."""
        self.collect(seconds)
        assert not self.session_reports, f"{what}: unexpected {[ET.tostring(r).decode() for r in self.session_reports]}"

    def collect(self, seconds):
        """Every stanza that arrives within seconds (IQ sets answered with a result, as expect does)."""
        received = []
        try:
            self.expect(lambda e: received.append(e) and False, "nothing", timeout=seconds)
        except AssertionError:
            pass
        return received

    def iq(self, kind, payload):
        """Sends an IQ from the component to the server's domain and returns its answer."""
        self._id = getattr(self, "_id", 0) + 1
        iq_id = f"c{self._id}"
        self.send(f"<iq type='{kind}' id='{iq_id}' from='{COMPONENT}' to='{DOMAIN}'>{payload}</iq>")
        return self.expect(lambda e: e.tag == q(NS_COMPONENT, "iq") and e.get("id") == iq_id, f"answer to {iq_id}")

    def bridge_message(self, child):
        message = self.expect(lambda e: e.tag == q(NS_COMPONENT, "message"), f"<{child}/>")
        # ejabberd leaves type='normal' off, which means the same (RFC 6121).
        assert message.get("from") == DOMAIN and message.get("type") in (None, "normal"), message.attrib
        element = message.find(q(NS_BRIDGE, child))
        assert element is not None, f"expected <{child}/>, got {ET.tostring(message).decode()}"
        return element

    def publish(self):
        iq = self.expect(lambda e: e.tag == q(NS_COMPONENT, "iq") and e.get("type") == "set", "a publish")
        assert iq.get("from") == DOMAIN, iq.attrib
        publish = iq.find(f"{q(NS_PUBSUB, 'pubsub')}/{q(NS_PUBSUB, 'publish')}")
        notification = publish.find(f"{q(NS_PUBSUB, 'item')}/{q(NS_PUSH, 'notification')}")
        options = iq.find(f"{q(NS_PUBSUB, 'pubsub')}/{q(NS_PUBSUB, 'publish-options')}/{q(NS_DATA, 'x')}")
        return publish.get("node"), notification, options


def form_values(form):
    return {f.get("var"): f.findtext(q(NS_DATA, "value")) for f in form.findall(q(NS_DATA, "field"))}


def forwarded_message(notification, important):
    account = notification.find(q(NS_BRIDGE, "account"))
    assert account is not None, "no <account/>"
    assert account.get("jid") == f"alice@{DOMAIN}", account.attrib
    assert account.get("important") == important, account.attrib
    message = notification.find(f"{q(NS_FORWARD, 'forwarded')}/{q(NS_CLIENT, 'message')}")
    assert message is not None, "no <forwarded/> jabber:client message"
    return message


PUBLISH_OPTIONS = (
    f"<x xmlns='{NS_DATA}' type='submit'>"
    "<field var='FORM_TYPE'><value>http://jabber.org/protocol/pubsub#publish-options</value></field>"
    "<field var='pushModule'><value>anotherimIOSprod</value></field>"
    "<field var='apushEncryptionPublicKey'><value>q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8M=</value></field>"
    "<field var='apushCalls'><value>1</value></field>"
    "<field var='apushRead'><value>1</value></field>"
    "</x>")


def enable(jid, node, padding=""):
    form = PUBLISH_OPTIONS.replace("</x>", f"<field var='padding'><value>{padding}</value></field></x>") \
        if padding else PUBLISH_OPTIONS
    return f"<enable xmlns='{NS_PUSH}' jid='{jid}' node='{node}'>{form}</enable>"


def error_condition(answer, kind, condition):
    """Asserts that answer is an error of type kind with condition; returns the error's text."""
    assert answer.get("type") == "error", ET.tostring(answer).decode()[:400]
    error = answer.find(q(answer.tag.split("}")[0][1:], "error"))
    assert error is not None and error.get("type") == kind, ET.tostring(answer).decode()[:400]
    assert error.find(q(NS_STANZAS, condition)) is not None, ET.tostring(error).decode()
    return error.findtext(q(NS_STANZAS, "text"))


def accounts(*jids):
    return f"<accounts xmlns='{NS_BRIDGE}'>" + "".join(f"<account jid='{j}'/>" for j in jids) + "</accounts>"


def refusal(account, node, kind="modify", condition="not-acceptable", message_id=None):
    """The component's answer to a <registered/> it cannot use: an error message echoing it."""
    id_attr = f" id='{message_id}'" if message_id else ""
    return (f"<message type='error' from='{COMPONENT}' to='{DOMAIN}'{id_attr}>"
            f"<registered xmlns='{NS_BRIDGE}' account='{account}'>"
            f"<enable xmlns='{NS_PUSH}' jid='{COMPONENT}' node='{node}'/></registered>"
            f"<error type='{kind}'><{condition} xmlns='{NS_STANZAS}'/>"
            f"<text xmlns='{NS_STANZAS}'>the component cannot use it</text></error></message>")


def wait_for_port(port, process, server, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{server} exited at start; see its logs")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{server} did not listen on {port}")


def check(label, step):
    step()
    print(f"ok  {label}")


def scenarios(c2s_port, component, register, stored_nodes=None):
    """The checks every bridge must pass. register(user) creates an account on the running server;
    stored_nodes(user), when given, lists the nodes of the user's push registrations in its store."""
    bob = Client(c2s_port, "bob", "laptop")
    phone = Client(c2s_port, "alice", "phone")

    # First: a session keeps only its latest push registration, and the phone must keep tok123.
    def other_allowed_service():
        assert phone.iq("set", enable("push.allowed.example", "tokO")).get("type") == "result"
        assert phone.iq("set", f"<disable xmlns='{NS_PUSH}' jid='push.allowed.example'/>").get("type") == "result"
        component.expect_nothing(0.5, "an allowed service that is not the component")
    check("another allowed service is accepted and not reported to the component", other_allowed_service)

    def refused():
        answer = phone.iq("set", enable("push.evil.example", "tokX"))
        assert answer.get("type") == "error", ET.tostring(answer).decode()
        error = answer.find(q(NS_CLIENT, "error"))
        assert error.find("{urn:ietf:params:xml:ns:xmpp-stanzas}not-allowed") is not None, ET.tostring(error).decode()
        component.expect_nothing(0.5, "a refused enable")
    check("enable towards a service not allowed is refused with not-allowed", refused)

    def oversized():
        for node, padding in (("t" * 2049, ""), ("tokBig", "x" * 5000)):
            form = PUBLISH_OPTIONS.replace("</x>", f"<field var='padding'><value>{padding}</value></field></x>")
            answer = phone.iq("set", f"<enable xmlns='{NS_PUSH}' jid='{COMPONENT}' node='{node}'>{form}</enable>")
            assert answer.get("type") == "error", ET.tostring(answer).decode()[:300]
            error = answer.find(q(NS_CLIENT, "error"))
            assert error.find("{urn:ietf:params:xml:ns:xmpp-stanzas}not-acceptable") is not None, ET.tostring(error).decode()
        component.expect_nothing(0.5, "an oversized enable")
    check("enable towards the component with a token or a form larger than any real one is refused", oversized)

    def other_spellings_of_the_component():
        for spelling in (f"{COMPONENT}/x", f"x@{COMPONENT}"):
            error_condition(phone.iq("set", enable(spelling, "tokS")), "modify", "not-acceptable")
        upper = COMPONENT.upper()
        error_condition(phone.iq("set", enable(upper, "tokU", padding="'" * 5000)), "modify", "not-acceptable")
        component.expect_nothing(0.5, "an enable towards another spelling of the component")
        assert phone.iq("set", enable(upper, "tokU")).get("type") == "result"
        en = component.bridge_message("registered").find(q(NS_PUSH, "enable"))
        assert en.get("jid") == COMPONENT and en.get("node") == "tokU", en.attrib
        assert phone.iq("set", f"<disable xmlns='{NS_PUSH}' jid='{COMPONENT}' node='tokU'/>").get("type") == "result"
        assert component.bridge_message("unregistered").find(q(NS_PUSH, "disable")).get("node") == "tokU"
    check("enable towards a JID of the component's domain other than its own is refused; another case of it "
          "is the component, caps included", other_spellings_of_the_component)

    def caps_for_every_service():
        # 5000 apostrophes: the server sends each as &apos;, so what it would store and send is 30 KB.
        for node, padding in (("t" * 2049, ""), ("tokO", "'" * 5000)):
            error_condition(phone.iq("set", enable("push.allowed.example", node, padding)), "modify", "not-acceptable")
    check("the token and options caps apply to a registration towards any service", caps_for_every_service)

    def no_publish_options():
        answer = phone.iq("set", f"<enable xmlns='{NS_PUSH}' jid='{COMPONENT}' node='tokNoForm'/>")
        assert error_condition(answer, "modify", "not-acceptable"), "the refusal says why"
        component.expect_nothing(0.5, "an enable without publish-options")
    check("enable towards the component without a publish-options form is refused with a text", no_publish_options)

    def registered():
        answer = phone.iq("set", enable(COMPONENT, "tok123"))
        assert answer.get("type") == "result", ET.tostring(answer).decode()
        element = component.bridge_message("registered")
        assert element.get("account") == f"alice@{DOMAIN}", element.attrib
        assert element.get("resource") == "phone", element.attrib
        en = element.find(q(NS_PUSH, "enable"))
        assert en.get("jid") == COMPONENT and en.get("node") == "tok123", en.attrib
        values = form_values(en.find(q(NS_DATA, "x")))
        assert values["pushModule"] == "anotherimIOSprod" and values["apushRead"] == "1", values
        assert values["apushEncryptionPublicKey"].endswith("8M=") and values["apushCalls"] == "1", values
    check("enable towards the component is reported as <registered/> with the publish-options", registered)

    desktop = Client(c2s_port, "alice", "desktop")

    def no_read_for_live_session():
        desktop.send(f"<message to='bob@{DOMAIN}' type='chat' id='d0'><displayed xmlns='{NS_MARKERS}' id='x0'/></message>")
        component.expect_nothing(1.0, "a read while the phone's session is live")
    check("no read push while the registration's session is live", no_read_for_live_session)

    desktop.close()
    phone.close()
    time.sleep(0.3)

    def offline_message():
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='m1'><body>Hello offline Alice</body></message>")
        node, notification, options = component.publish()
        assert node == "tok123", node
        message = forwarded_message(notification, "true")
        assert message.get("id") == "m1" and message.get("from") == f"bob@{DOMAIN}/laptop", message.attrib
        body = message.find(q(NS_CLIENT, "body"))
        assert body is not None and not body.text and len(body) == 0, ET.tostring(message).decode()
        assert form_values(options)["pushModule"] == "anotherimIOSprod"
    check("a message to offline alice is a publish with <account important=true/> and <forwarded/>", offline_message)

    def no_text_reaches_the_component():
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='m2'><body>the secret text</body>"
                 "<encrypted xmlns='eu.siacs.conversations.axolotl'><header sid='7'><key rid='8'>S0VZS0VZ</key>"
                 "<iv>SVZJVg==</iv></header><payload>UEFZTE9BRA==</payload></encrypted>"
                 "<x xmlns='jabber:x:oob'><url>https://example.org/secret.png</url></x></message>")
        _, notification, _ = component.publish()
        text = ET.tostring(notification).decode()
        message = forwarded_message(notification, "true")
        encrypted = message.find("{eu.siacs.conversations.axolotl}encrypted")
        assert encrypted is not None and len(encrypted) == 0 and not encrypted.text, text
        assert message.find("{jabber:x:oob}x") is None, text
        for secret in ("secret", "S0VZ", "SVZJ", "UEFZ"):
            assert secret not in text, text
    check("the forwarded copy carries no body text, encrypted payload or unknown child", no_text_reaches_the_component)

    def mention_by_name():
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='m3'><body>Alice, look!</body></message>")
        _, notification, _ = component.publish()
        assert notification.find(q(NS_BRIDGE, "account")).get("mention") == "true", ET.tostring(notification).decode()
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='m4'><body>no malice meant</body></message>")
        _, notification, _ = component.publish()
        assert notification.find(q(NS_BRIDGE, "account")).get("mention") is None, ET.tostring(notification).decode()
    check("a body that names the account marks <account mention=true/>, a word that contains it does not", mention_by_name)

    def only_mentions_are_referenced():
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='ref1'><body>a file</body>"
                 "<reference xmlns='urn:xmpp:reference:0' type='data' uri='https://files.example/secret.jpg'/>"
                 f"<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@{DOMAIN}'/></message>")
        _, notification, _ = component.publish()
        message = forwarded_message(notification, "true")
        references = message.findall("{urn:xmpp:reference:0}reference")
        assert [(r.get("type"), r.get("uri")) for r in references] == [("mention", f"xmpp:alice@{DOMAIN}")], \
            ET.tostring(message).decode()
    check("the forwarded copy keeps a mention reference and drops any other (a file's URL)", only_mentions_are_referenced)

    def large_message():
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='big1'><body>{'x' * 240 * 1024}</body></message>")
        _, notification, _ = component.publish()
        size = len(ET.tostring(notification))
        assert size < 2048, size
        assert forwarded_message(notification, "true").get("id") == "big1"
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='{'i' * 20 * 1024}'><body>long id</body></message>")
        _, notification, _ = component.publish()
        assert notification.find(q(NS_FORWARD, "forwarded")) is None, len(ET.tostring(notification))
        assert notification.find(q(NS_BRIDGE, "account")).get("jid") == f"alice@{DOMAIN}"
    check("a 240 KiB message is forwarded stripped; a copy over 16 KiB is left out, the account kept", large_message)

    def call():
        bob.send(f"<message to='alice@{DOMAIN}' type='chat' id='call1'><propose xmlns='{NS_JMI}' id='sess1'>"
                 "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='audio'/></propose>"
                 "<store xmlns='urn:xmpp:hints'/></message>")
        node, notification, _ = component.publish()
        message = forwarded_message(notification, "true")
        propose = message.find(q(NS_JMI, "propose"))
        assert propose is not None and propose.get("id") == "sess1", ET.tostring(message).decode()
    check("a JMI propose to offline alice is forwarded", call)

    desktop = Client(c2s_port, "alice", "desktop")

    def chat_state_is_no_read():
        desktop.send(f"<message to='bob@{DOMAIN}' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")
        component.expect_nothing(1.0, "a chat state")
    check("a chat state from another device is not a read", chat_state_is_no_read)

    def displayed_read():
        desktop.send(f"<message to='bob@{DOMAIN}' type='chat' id='d1'><displayed xmlns='{NS_MARKERS}' id='m1'/></message>")
        node, notification, options = component.publish()
        assert node == "tok123", node
        message = forwarded_message(notification, "false")
        assert message.get("from") == f"alice@{DOMAIN}/desktop" and message.get("to") == f"bob@{DOMAIN}", message.attrib
        assert message.find(q(NS_MARKERS, "displayed")).get("id") == "m1"
        assert form_values(options)["apushRead"] == "1"
    check("a displayed marker from the desktop is a read push for the offline phone", displayed_read)

    def sent_read():
        desktop.send(f"<message to='bob@{DOMAIN}' type='chat' id='o1'><body>reply from desktop</body></message>")
        _, notification, _ = component.publish()
        message = forwarded_message(notification, "false")
        assert message.get("id") == "o1" and message.get("from") == f"alice@{DOMAIN}/desktop", message.attrib
    check("a message sent from the desktop is a read push for the offline phone", sent_read)

    def mds_read():
        answer = desktop.iq("set",
            f"<pubsub xmlns='{NS_PUBSUB}'><publish node='{NS_MDS}'><item id='bob@{DOMAIN}'>"
            f"<displayed xmlns='{NS_MDS}'><stanza-id xmlns='urn:xmpp:sid:0' id='sid-1' by='alice@{DOMAIN}'/></displayed>"
            "</item></publish></pubsub>")
        assert answer.get("type") == "result", ET.tostring(answer).decode()
        _, notification, _ = component.publish()
        message = forwarded_message(notification, "false")
        assert message.get("from") == f"alice@{DOMAIN}", message.attrib
        items = message.find(f"{q(NS_EVENT, 'event')}/{q(NS_EVENT, 'items')}")
        assert items.get("node") == NS_MDS, items.attrib
        item = items.find(q(NS_EVENT, "item"))
        assert item.get("id") == f"bob@{DOMAIN}", item.attrib
        assert len(item) == 0, ET.tostring(item).decode()  # the chat is the item's id; nothing else is forwarded
    check("an MDS publish from the desktop is a read push carrying the PEP event", mds_read)

    def unregistered():
        answer = desktop.iq("set", f"<disable xmlns='{NS_PUSH}' jid='{COMPONENT}' node='tok123'/>")
        assert answer.get("type") == "result", ET.tostring(answer).decode()
        element = component.bridge_message("unregistered")
        assert element.get("account") == f"alice@{DOMAIN}", element.attrib
        disable = element.find(q(NS_PUSH, "disable"))
        assert disable.get("jid") == COMPONENT and disable.get("node") == "tok123", disable.attrib
        # mod_cloud_notify handled it too: the registration is gone, so a read pushes nothing.
        desktop.send(f"<message to='bob@{DOMAIN}' type='chat' id='d2'><displayed xmlns='{NS_MARKERS}' id='m9'/></message>")
        component.expect_nothing(1.0, "a read after disable")
    check("disable is reported as <unregistered/> and still handled by cloud_notify", unregistered)

    def unregistered_all():
        # ejabberd answers a disable that removes nothing with an error: register one first.
        assert desktop.iq("set", enable(COMPONENT, "tok124")).get("type") == "result"
        component.bridge_message("registered")
        answer = desktop.iq("set", f"<disable xmlns='{NS_PUSH}' jid='{COMPONENT}'/>")
        assert answer.get("type") == "result"
        disable = component.bridge_message("unregistered").find(q(NS_PUSH, "disable"))
        assert disable.get("jid") == COMPONENT and disable.get("node") is None, disable.attrib
    check("disable with no node is reported with no node", unregistered_all)

    def refused_registration():
        carol = Client(c2s_port, "carol", "phone")
        for node in ("tokRefused", "tokWait", "tokStranger"):
            assert carol.iq("set", enable(COMPONENT, node)).get("type") == "result"
            registered = component.bridge_message("registered")
            assert registered.get("account") == f"carol@{DOMAIN}"
        component.send(refusal(f"carol@{DOMAIN}", "tokRefused", message_id="r1"))
        component.send(refusal(f"carol@{DOMAIN}", "tokWait", "wait", "resource-constraint"))
        # From anyone but the component, or for an account of another server, it is nothing.
        bob.send(refusal(f"carol@{DOMAIN}", "tokStranger").replace(f" from='{COMPONENT}'", ""))
        component.send(refusal("carol@elsewhere.example", "tokStranger"))
        time.sleep(0.5)
        carol.close()
        time.sleep(0.3)
        bob.send(f"<message to='carol@{DOMAIN}' type='chat' id='c1'><body>for carol</body></message>")
        nodes = {iq.find(f"{q(NS_PUBSUB, 'pubsub')}/{q(NS_PUBSUB, 'publish')}").get("node")
                 for iq in component.collect(2.0) if iq.tag == q(NS_COMPONENT, "iq") and iq.get("type") == "set"}
        assert nodes == {"tokWait", "tokStranger"}, nodes
        if stored_nodes:
            assert set(stored_nodes("carol")) == {"tokWait", "tokStranger"}, stored_nodes("carol")
    check("a registration the component answers with an error is removed from the server; wait, a stranger's "
          "or another server's account removes nothing", refused_registration)

    def deleted_account():
        gone = Client(c2s_port, "gone", "phone")
        assert gone.iq("set", enable(COMPONENT, "tokGone")).get("type") == "result"
        component.bridge_message("registered")
        answer = gone.iq("set", "<query xmlns='jabber:iq:register'><remove/></query>")
        assert answer.get("type") == "result", ET.tostring(answer).decode()
        element = component.bridge_message("unregistered")
        assert element.get("account") == f"gone@{DOMAIN}", element.attrib
        disable = element.find(q(NS_PUSH, "disable"))
        assert disable.get("jid") == COMPONENT and disable.get("node") is None, disable.attrib
        gone.close()
        # Whoever takes the name next gets no push meant for the old owner's phone.
        register("gone")
        bob.send(f"<message to='gone@{DOMAIN}' type='chat' id='g1'><body>hello new gone</body></message>")
        nodes = {iq.find(f"{q(NS_PUBSUB, 'pubsub')}/{q(NS_PUBSUB, 'publish')}").get("node")
                 for iq in component.collect(1.5) if iq.tag == q(NS_COMPONENT, "iq") and iq.get("type") == "set"}
        assert nodes == set(), nodes
    check("an account deleted in-band is reported as <unregistered/> with no node, and its registrations are "
          "gone for whoever takes its name", deleted_account)

    def accounts_query():
        answer = component.iq("get", accounts(f"alice@{DOMAIN}", f"never@{DOMAIN}", f"BOB@{DOMAIN}"))
        assert answer.get("type") == "result", ET.tostring(answer).decode()
        listed = [(a.get("jid"), a.get("exists")) for a in answer.findall(f"{q(NS_BRIDGE, 'accounts')}/{q(NS_BRIDGE, 'account')}")]
        assert listed == [(f"alice@{DOMAIN}", "true"), (f"never@{DOMAIN}", "false"), (f"BOB@{DOMAIN}", "true")], listed
        error_condition(component.iq("get", accounts(*[f"u{i}@{DOMAIN}" for i in range(101)])), "modify", "bad-request")
        error_condition(component.iq("get", accounts(f"alice@{DOMAIN}", "alice@elsewhere.example")), "modify", "bad-request")
        error_condition(component.iq("get", accounts(f"alice@{DOMAIN}/phone")), "modify", "bad-request")
        error_condition(bob.iq("get", accounts(f"alice@{DOMAIN}"), to=DOMAIN), "cancel", "forbidden")
    check("the component's accounts query says which accounts exist; too many, another server's or a "
          "stranger's query is refused", accounts_query)

    for client in (desktop, bob):
        client.close()


def session_scenarios(c2s_port, component, register, hibernates=True):
    """What the bridge reports of an account's own sessions (grace): for accounts with a registration at
    the component, the availability of each session without push (its `show` only), and that the
    account was active on one, at most once per account every few seconds. hibernates: whether a
    session with stream management whose connection drops hibernates (it is then reported gone)."""
    register("erin")
    account = f"erin@{DOMAIN}"
    component.collect(0.5)
    component.session_reports.clear()

    def presence(what, resource, available):
        report = component.next_session_report(what)
        assert report.tag == q(NS_BRIDGE, "presence"), ET.tostring(report).decode()
        assert dict(report.attrib) == {"account": account, "resource": resource, "available": available}, report.attrib
        assert len(report) == 0 and not (report.text or "").strip(), ET.tostring(report).decode()

    laptop = Client(c2s_port, "erin", "laptop")

    def unregistered_account_unheard():
        laptop.send("<presence><show>away</show></presence>")
        laptop.send(f"<message to='bob@{DOMAIN}' type='chat' id='e0'><body>hi</body></message>")
        component.no_session_report(1.0, "an account without a registration at the component")
    check("an account without a registration at the component is not reported", unregistered_account_unheard)

    phone = Client(c2s_port, "erin", "phone")
    assert phone.iq("set", enable(COMPONENT, "tokErin")).get("type") == "result"
    component.bridge_message("registered")
    laptop.send("<presence/>")

    def available():
        presence("the laptop available", "laptop", "true")
    check("a session without push that becomes available is reported <presence available='true'/>", available)

    def shows():
        laptop.send("<presence><show>away</show><status>secret status text</status><priority>5</priority></presence>")
        presence("the laptop away", "laptop", "false")
        laptop.send("<presence><show>chat</show><status>secret status text</status></presence>")
        presence("the laptop free to chat", "laptop", "true")
        laptop.send("<presence><show>chat</show><status>another text</status></presence>")
        for show in ("dnd", "xa"):
            laptop.send(f"<presence><show>{show}</show></presence>")
        presence("the laptop busy", "laptop", "false")
        laptop.send("<presence/>")
        presence("the laptop available again", "laptop", "true")
        component.no_session_report(0.5, "no change")
        assert not any("secret" in stanza for stanza in component.capture), "a status text reached the component"
    check("away, xa and dnd are not available, chat is; only changes are reported, never a status text "
          "or priority", shows)

    def phone_unheard():
        phone.send("<presence><show>away</show></presence>")
        phone.send("<presence/>")
        phone.send(f"<message to='bob@{DOMAIN}' type='chat' id='e1'><body>from the phone</body></message>")
        phone.send(f"<message to='bob@{DOMAIN}' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")
        component.no_session_report(1.0, "the session with push")
    check("the session that enabled push is never reported, present or active", phone_unheard)

    def active():
        time.sleep(ACTIVITY_INTERVAL)  # since the message sent before the account registered
        laptop.send(f"<message to='bob@{DOMAIN}' type='chat'><paused xmlns='http://jabber.org/protocol/chatstates'/></message>")
        component.no_session_report(0.5, "a paused chat state")
        laptop.send(f"<message to='bob@{DOMAIN}' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>")
        report = component.next_session_report("the laptop active")
        assert report.tag == q(NS_BRIDGE, "active") and dict(report.attrib) == {"account": account}, ET.tostring(report).decode()
        laptop.send(f"<message to='bob@{DOMAIN}' type='chat' id='e2'><body>typed on the laptop</body></message>")
        laptop.send(f"<message to='bob@{DOMAIN}' type='chat' id='e3'><displayed xmlns='{NS_MARKERS}' id='b1'/></message>")
        component.no_session_report(1.0, "activity within the interval")
        time.sleep(ACTIVITY_INTERVAL)
        laptop.send(f"<message to='bob@{DOMAIN}' type='chat' id='e4'><body>later on the laptop</body></message>")
        report = component.next_session_report("the laptop active again")
        assert report.tag == q(NS_BRIDGE, "active"), ET.tostring(report).decode()
        time.sleep(ACTIVITY_INTERVAL)
        answer = laptop.iq("set",
            f"<pubsub xmlns='{NS_PUBSUB}'><publish node='{NS_MDS}'><item id='bob@{DOMAIN}'>"
            f"<displayed xmlns='{NS_MDS}'><stanza-id xmlns='urn:xmpp:sid:0' id='sid-e' by='{account}'/></displayed>"
            "</item></publish></pubsub>")
        assert answer.get("type") == "result", ET.tostring(answer).decode()
        report = component.next_session_report("the laptop's XEP-0490 display")
        assert report.tag == q(NS_BRIDGE, "active"), ET.tostring(report).decode()
    check("activity on a session without push (a chat state, a message, a XEP-0490 display) is reported "
          "<active/>, at most once per account in the interval; a paused chat state is none", active)

    def unavailable():
        laptop.send("<presence type='unavailable'><status>bye</status></presence>")
        presence("the laptop unavailable", "laptop", "false")
    check("an unavailable presence is reported not available", unavailable)

    def closed_without_unavailable():
        desk = Client(c2s_port, "erin", "desk")
        presence("the desk available", "desk", "true")
        desk.sock.shutdown(socket.SHUT_RDWR)
        desk.sock.close()
        presence("the desk dropped", "desk", "false")
    check("a session that drops without an unavailable presence is reported not available", closed_without_unavailable)

    def hibernated():
        tablet = Client(c2s_port, "erin", "tablet")
        presence("the tablet available", "tablet", "true")
        tablet.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>")
        tablet.expect(lambda e: e.tag == "{urn:xmpp:sm:3}enabled", "stream management")
        tablet.sock.shutdown(socket.SHUT_RDWR)  # no </stream:stream>: the session hibernates
        tablet.sock.close()
        presence("the tablet hibernated", "tablet", "false")
    if hibernates:
        check("a session that hibernates (XEP-0198) is reported not available", hibernated)

    for client in (laptop, phone):
        client.close()


def run_checks(base, component_port, checks):
    """Connects the fake component and runs `checks(component)`, which returns the component in use at
    the end (a check may reconnect it). Prints the outcome, keeps what the component received in
    `base/component.xml.txt` and closes it. Returns the exit status: 0 when every check passed."""
    component = None
    try:
        component = Component(component_port)
        component = checks(component)
        print("all checks passed")
        return 0
    except AssertionError as failure:
        print(f"FAIL {failure}")
        return 1
    finally:
        if component:
            with open(os.path.join(base, "component.xml.txt"), "w") as f:
                f.write("\n".join(component.capture) + "\n")
            component.close()
