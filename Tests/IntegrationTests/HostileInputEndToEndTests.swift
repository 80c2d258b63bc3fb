import Foundation
import Logging
import Sealing
import Store
import Testing
import XMLStream
import XMPP
import LocalServers

/// Hostile senders, through a real Prosody and a real ejabberd, each with its bridge, against the
/// component as its own process:
/// nothing a peer sends stops it or makes it act for the account (issue 7).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HostileInputEndToEndTests {
    /// A localpart that starts with a combining mark once fused with the query syntax the classifier
    /// built around it, and the component trapped. A group chat message reaches the classifier only
    /// through a session the server keeps for the phone, so the phone hibernates (XEP-0198).
    @Test(arguments: PushTestbed.bridgedServers)
    func aSenderNamedWithACombiningMarkCannotStopTheComponent(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 1, placement: .process) { bed in
            let key = try await bed.hibernateDevice(token: "token-hostile-name")
            let hostile = "\u{0301}mark"
            try await bed.server.register(user: hostile, password: "pw-\(hostile)")
            let sender = try await bed.client(hostile)
            try sender.send(
                try Element.parse(
                    """
                    <message xmlns='jabber:client' type='groupchat' to='alice@localhost/phone' id='g1'>\
                    <body>hello</body><stanza-id xmlns='urn:xmpp:sid:0' id='s1' by='\(hostile)@localhost'/></message>
                    """))
            _ = try await bed.nextPush(key: key)
            #expect(await bed.componentIsRunning, "the component process ended")

            // And it goes on: a message to another device of alice's, fully offline, is pushed.
            // (Prosody pushes the hibernated phone once until it comes back, ejabberd for every stanza.)
            let other = try await bed.enableDevice(token: "token-after-hostile", resource: "tablet")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "still there?")
            var chats: [String] = []
            let deadline = ContinuousClock.now + .seconds(15)
            while ContinuousClock.now < deadline, !chats.contains("bob@localhost") {
                guard let push = try? await bed.appServer.nextPush(timeout: .seconds(1)),
                    push.node == "token-after-hostile"
                else { continue }
                let summary = try await bed.open(push, key: other)
                chats.append(summary["chat"] as? String ?? "?")
            }
            #expect(chats.contains("bob@localhost"), "bob's push did not come: \(chats)")
            #expect(await bed.componentIsRunning)
            await bob.close()
            await sender.close()
        }
    }

    /// Only the account reads (docs/wire-contract.md, Classifying a publish): a stranger's forged carbon of a sent
    /// message with a
    /// displayed marker, and a forged XEP-0490 event, neither reset the count nor cancel the held push
    /// nor send a read push.
    @Test(arguments: PushTestbed.bridgedServers)
    func aStrangerCannotReadAChatForTheAccount(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 3, placement: .process) { bed in
            let key = try await bed.enableDevice(token: "token-forged-read", reads: true)
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "one", id: "r1")
            #expect(try await bed.nextPush(key: key).summary["count"] as? Int == 1)
            try bed.message(from: bob, to: "alice@localhost", body: "two", id: "r2")
            try bob.send(
                try Element.parse(
                    """
                    <message xmlns='jabber:client' type='chat' to='alice@localhost' id='forged-carbon'>\
                    <sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>\
                    <message xmlns='jabber:client' type='chat' from='alice@localhost/desktop' to='bob@localhost' id='x1'>\
                    <displayed xmlns='urn:xmpp:chat-markers:0' id='r2'/></message></forwarded></sent></message>
                    """))
            try bob.send(
                try Element.parse(
                    """
                    <message xmlns='jabber:client' type='headline' to='alice@localhost' id='forged-mds'>\
                    <event xmlns='http://jabber.org/protocol/pubsub#event'><items node='urn:xmpp:mds:displayed:0'>\
                    <item id='bob@localhost'/></items></event></message>
                    """))
            // Whatever the forgeries were taken for, none is a read, and the held push still goes.
            var counts: [Int] = []
            let deadline = ContinuousClock.now + .seconds(9)
            while ContinuousClock.now < deadline, counts.isEmpty {
                guard let (push, summary) = try await bed.pushIfAny(key: key, within: .seconds(1)) else { continue }
                #expect(push.kind != "read", "a stranger's forgery made a read push")
                if summary["kind"] as? String == "message", let count = summary["count"] as? Int {
                    counts.append(count)
                }
            }
            #expect(counts == [2], "the held push must go with the count the forgeries did not reset")
            await bob.close()
        }
    }

    /// A call ends on a retract from its caller, or on an answer from the account's own devices; a
    /// third party who learned the session id cannot turn it into a missed call.
    @Test(arguments: PushTestbed.bridgedServers)
    func aStrangerCannotEndSomeoneElsesCall(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, placement: .process) { bed in
            let key = try await bed.enableDevice(token: "token-forged-retract", calls: "1")
            let bob = try await bed.client("bob", resource: "laptop")
            let carol = try await bed.client("carol")
            try bed.propose(from: bob, to: "alice@localhost", sid: "sid-forged")
            #expect(try await bed.nextPush(key: key).push.kind == "voip")
            for forgery in ["retract", "accept", "proceed", "reject"] {
                try carol.send(
                    try Element.parse(
                        """
                        <message xmlns='jabber:client' type='chat' to='alice@localhost' id='f-\(forgery)'>\
                        <\(forgery) xmlns='urn:xmpp:jingle-message:0' id='sid-forged'/><store xmlns='urn:xmpp:hints'/></message>
                        """))
            }
            await bed.expectNoMessagePush(key: key, within: .seconds(3))
            try bob.send(
                try Element.parse(
                    """
                    <message xmlns='jabber:client' type='chat' to='alice@localhost' id='real-retract'>\
                    <retract xmlns='urn:xmpp:jingle-message:0' id='sid-forged'/><store xmlns='urn:xmpp:hints'/></message>
                    """))
            var missed: [String: Any]?
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, missed == nil {
                guard let (_, summary) = try await bed.pushIfAny(key: key, within: .seconds(1)) else { continue }
                if summary["missed"] as? Bool == true { missed = summary }
            }
            let details = try #require(missed?["call"] as? [String: Any], "the caller's retract made no missed call")
            #expect(details["sid"] as? String == "sid-forged")
            await bob.close()
            await carol.close()
        }
    }
}

extension PushTestbed {
    /// A device of `user` enables push in a session that then loses its connection: the server keeps
    /// the session hibernated (XEP-0198) and pushes for what it queues to it, group chat included.
    func hibernateDevice(_ user: String = "alice", token: String, resource: String = "phone") async throws -> KeyPair {
        let (device, key) = try await resumableDevice(user, token: token, resource: resource)
        device.drop()
        return key
    }

    /// A device of `user` with stream management (XEP-0198) that enables push: what it is sent stays
    /// unacknowledged, and `drop()` hibernates its session.
    func resumableDevice(
        _ user: String = "alice", token: String, resource: String = "phone"
    ) async throws -> (C2SClient, KeyPair) {
        let key = KeyPair.generate()
        let form = DataForm(
            type: .submit, formType: Namespace.pubsubPublishOptions,
            fields: [
                .value("pushModule", "fcm-test"), .value("apushEncryptionPublicKey", Base64.encode(key.publicKey)),
            ])
        let device = try await client(user, resource: resource)
        try await device.enableResumption()
        try await device.enablePush(service: Self.componentJID, node: token, publishOptions: form)
        return (device, key)
    }

    /// No message push (a wake may come: a forgery can be taken for one) within `window`.
    func expectNoMessagePush(
        key: KeyPair, within window: Duration,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline {
            guard let (push, summary) = try? await pushIfAny(key: key, within: .milliseconds(500)) else { continue }
            if push.kind == nil {
                Issue.record("an unexpected message push: \(summary)", sourceLocation: sourceLocation)
            }
        }
    }
}

/// Issue 20 item 1, the component's side: what a user can make the server send the component costs that
/// user's own publish, never the link. On stock servers, so that no bridge's caps stand in the way.
extension HostileInputEndToEndTests {
    /// 60 KB of `'` in an options form, which Prosody writes as `&apos;`: every publish for that user is
    /// over 256 KiB. Each is refused alone; the same link goes on pushing for others.
    @Test(arguments: [PushTestbed.Server.prosodyStock, .prosody13Stock])
    func aPublishOverTheStanzaLimitIsRefusedAloneAndTheLinkStaysUp(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let bobKey = try await bed.enableDevice("bob", token: "token-fine")
            let form = DataForm(
                type: .submit, formType: Namespace.pubsubPublishOptions,
                fields: [
                    .value("pushModule", "fcm-test"),
                    .value("apushEncryptionPublicKey", Base64.encode(KeyPair.generate().publicKey)),
                    .value("padding", "PADDING"),
                ])
            var enable = Element(
                "enable", namespace: Namespace.push, ["jid": PushTestbed.componentJID, "node": "token-huge"])
            enable.append(form.element)
            let iq = Element.iq(type: .set, id: "enable-huge", payload: enable, namespace: Namespace.client)
            // 60 KB as the client sends it (a `'` needs no escape in text), 360 KB as the server writes it.
            let text = iq.serialized(parentNamespace: Namespace.client)
                .replacingOccurrences(of: "PADDING", with: String(repeating: "'", count: 60_000))
            let phone = try await bed.client("alice", resource: "phone")
            try phone.sendRaw(text)
            let enabled = try await phone.nextStanza(matching: { $0.name == "iq" && $0.stanzaID == "enable-huge" })
            #expect(enabled.iqType == .result)
            await phone.close()
            let carol = try await bed.client("carol")
            for index in 1...3 {
                try bed.message(from: carol, to: "alice@localhost", body: "huge \(index)")
            }
            func refusals() -> Int {
                bed.logSink.events.filter { $0.message.contains("a stanza exceeds 262144 bytes") }.count
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, refusals() < 3 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(refusals() == 3, "each oversized publish is refused on its own")
            try bed.message(from: carol, to: "bob@localhost", body: "still there?")
            let (push, summary) = try await bed.nextPush(key: bobKey, secrets: ["still there?"])
            #expect(push.node == "token-fine")
            #expect(summary["chat"] as? String == "carol@localhost")
            #expect(!bed.logSink.text.contains("component link to"), "the link went down")
            #expect(
                try await SQLitePushStore(.file(path: bed.storePath)).registration(
                    domain: "localhost", token: "token-huge")
                    == nil)
            await carol.close()
        }
    }

    /// A push registration toward another JID of the component's domain is no registration: its
    /// publishes are refused with an error the server counts, and nothing is stored or pushed.
    @Test(arguments: [
        (PushTestbed.Server.prosodyStock, "apush.localhost/x"), (.prosodyStock, "x@apush.localhost"),
        (.prosody13Stock, "apush.localhost/x"), (.prosody13Stock, "x@apush.localhost"),
        (.ejabberd, "apush.localhost/x"), (.ejabberd, "x@apush.localhost"), (.ejabberd24, "x@apush.localhost"),
    ])
    func aPublishToAnotherJIDOfTheComponentIsRefused(on server: PushTestbed.Server, service: String) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = KeyPair.generate()
            let form = DataForm(
                type: .submit, formType: Namespace.pubsubPublishOptions,
                fields: [
                    .value("pushModule", "fcm-test"), .value("apushEncryptionPublicKey", Base64.encode(key.publicKey)),
                ])
            let phone = try await bed.client("alice", resource: "phone")
            try await phone.enablePush(service: service, node: "token-elsewhere", publishOptions: form)
            await phone.close()
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "to the side door")
            func refusals() -> Int {
                bed.logSink.events.filter { $0.message.contains("push nodes live at apush.localhost only") }.count
            }
            let deadline = ContinuousClock.now + .seconds(15)
            while ContinuousClock.now < deadline, refusals() < 1 { try await Task.sleep(for: .milliseconds(100)) }
            #expect(refusals() >= 1, "the publish to \(service) was not refused")
            await bed.expectNoPush(within: .seconds(2))
            #expect(
                try await SQLitePushStore(.file(path: bed.storePath))
                    .registration(domain: "localhost", token: "token-elsewhere") == nil)
            await bob.close()
        }
    }

    /// Issue 20 item 3: a registration the component cannot use (a key that is not 32 bytes) is refused
    /// when the bridge reports it, with it echoed, and the bridge removes it: no publish for it ever
    /// comes, so none is refused or answered as an unknown node. On Prosody 0.12 and 13.0 (the bridge
    /// removes it through mod_cloud_notify's own disable handler).
    @Test(arguments: [PushTestbed.Server.prosodyBridged, .prosody13Bridged])
    func aRegistrationTheComponentCannotUseIsRemovedByTheBridge(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let form = DataForm(
                type: .submit, formType: Namespace.pubsubPublishOptions,
                fields: [.value("pushModule", "fcm-test"), .value("apushEncryptionPublicKey", "AAAA")])
            let phone = try await bed.client("alice", resource: "phone")
            try await phone.enablePush(service: PushTestbed.componentJID, node: "token-unusable", publishOptions: form)
            await phone.close()
            let bob = try await bed.client("bob")
            try await Task.sleep(for: .seconds(1))
            try bed.message(from: bob, to: "alice@localhost", body: "anyone?")
            await bed.expectNoPush(within: .seconds(3))
            let publishes = bed.logSink.events.filter {
                $0.message.contains("refused a publish") || $0.message.contains("unknown node")
            }
            #expect(publishes.isEmpty, "publishes still came: \(publishes.map(\.message))")
            await bob.close()
        }
    }
}
