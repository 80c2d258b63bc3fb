import LocalServers
import Foundation
import Logging
import Sealing
import Store
import Testing
import XMLStream
import XMPP
import TestSupport

/// Issue 3 end to end: a real server publishes, the component seals and coalesces, the stand-in App
/// Server receives, and every envelope is opened by the device key and by the independent opener.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PushEndToEndTests {
    @Test(arguments: PushTestbed.bridgedServers)
    func aMessageToAnOfflineAccountArrivesSealedWithoutItsText(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            let key = try await bed.enableDevice(token: "token-message")
            let bob = try await bed.client("bob")
            let secret = "the meeting moved to 5 pm, tell nobody"
            try bed.message(from: bob, to: "alice@localhost", body: secret, id: "msg-1")
            let (push, summary) = try await bed.nextPush(key: key, secrets: [secret])
            #expect(push.node == "token-message")
            #expect(push.pushModule == "fcm-test")
            #expect(push.kind == nil)
            #expect(summary["v"] as? Int == 2)
            #expect(summary["kind"] as? String == "message")
            #expect(summary["account"] as? String == "alice@localhost")
            #expect(summary["chat"] as? String == "bob@localhost")
            #expect(summary["from"] as? String == "bob@localhost")
            #expect(summary["count"] as? Int == 1)
            #expect(summary["id"] is String)
            let registration = try #require(
                try await SQLitePushStore(.file(path: bed.storePath))
                    .registration(domain: "localhost", token: "token-message"))
            let tag = try CollapseKey(bytes: registration.collapseKey).tag(
                account: "alice@localhost", chat: "bob@localhost")
            #expect(push.collapse == tag)
            #expect(bed.appServer.violations.isEmpty)
            #expect(!bed.logSink.text.contains("token-message"), "a token reached the log")
            #expect(!bed.logSink.text.contains(secret), "message text reached the log")
            await bob.close()
        }
    }

    /// A body just under the server's own c2s limit (256 KiB: Prosody's default, and the
    /// `max_stanza_size` of Debian's ejabberd.yml) would, forwarded whole, make a publish over the
    /// component's limit and end the stream with every answer in flight. The bridge forwards a
    /// stripped copy (docs/wire-contract.md, Bridge stanzas), so the push goes out and the link stays up.
    @Test(arguments: PushTestbed.bridgedServers)
    func aMessageNearTheServersSizeLimitCostsNotTheLink(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            let key = try await bed.enableDevice(token: "token-large")
            let bob = try await bed.client("bob")
            let large = String(repeating: "x", count: 261_700)
            try bed.message(from: bob, to: "alice@localhost", body: large, id: "large-1")
            let (push, summary) = try await bed.nextPush(key: key, secrets: [String(large.prefix(64))])
            #expect(push.node == "token-large")
            #expect(summary["kind"] as? String == "message")
            #expect(summary["chat"] as? String == "bob@localhost")
            let connections = bed.logSink.text.components(separatedBy: "connected to 127.0.0.1").count - 1
            #expect(connections == 1, "the component's link was lost and made again")
            await bob.close()
        }
    }

    /// XEP-0198 on ejabberd: the phone's connection drops while a message to it waits unacknowledged.
    /// The server keeps the session hibernated and mod_push pushes once for what it queued (in its
    /// `c2s_session_pending` hook), and the bridge adds the queued message to the push.
    @Test(arguments: [PushTestbed.Server.ejabberdBridged, .ejabberd24Bridged])
    func aMessageLeftUnacknowledgedWhenTheConnectionDropsIsPushedForTheAccount(
        on server: PushTestbed.Server
    ) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let (phone, key) = try await bed.resumableDevice(token: "token-pending")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost/phone", body: "never acknowledged", id: "pending-1")
            _ = try await phone.nextStanza(matching: { $0.name == "message" && $0.stanzaID == "pending-1" })
            phone.drop()
            let (push, summary) = try await bed.nextPush(key: key, secrets: ["never acknowledged"])
            #expect(push.node == "token-pending")
            #expect(summary["kind"] as? String == "message")
            #expect(summary["account"] as? String == "alice@localhost")
            #expect(summary["chat"] as? String == "bob@localhost")
            // Only the stanza the bridge forwards carries the archive id: the stock publish has none.
            #expect(summary["id"] is String, "the push was not enriched with the queued message")
            await bob.close()
        }
    }

    /// One app, two accounts on one server, one device token (docs/wire-contract.md, Publishes): each account keeps its
    /// own registration, device key and counts, and one account removing its registration leaves the
    /// other's working (no tombstone of the token for both).
    @Test func twoAccountsSharingATokenKeepTheirOwnRegistrations() async throws {
        try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 0) { bed in
            let aliceKey = try await bed.enableDevice("alice", token: "token-shared")
            let bobKey = try await bed.enableDevice("bob", token: "token-shared")
            let carol = try await bed.client("carol")
            try bed.message(from: carol, to: "alice@localhost", body: "for alice")
            #expect(try await bed.nextPush(key: aliceKey).summary["account"] as? String == "alice@localhost")
            try bed.message(from: carol, to: "bob@localhost", body: "for bob")
            #expect(try await bed.nextPush(key: bobKey).summary["account"] as? String == "bob@localhost")

            let bob = try await bed.client("bob", resource: "settings")
            let node = "urn:xmpp:apush:0#registrations"
            let first = try await bob.executeCommand(on: PushTestbed.componentJID, node: node)
            let done = try await bob.executeCommand(
                on: PushTestbed.componentJID, node: node, action: .complete, after: first,
                form: .submit(formType: nil, values: ["remove-all": "true"]))
            #expect(done.findString("@status") == "completed")

            try bed.message(from: carol, to: "alice@localhost", body: "still for alice")
            let again = try await bed.nextPush(key: aliceKey)
            #expect(again.summary["account"] as? String == "alice@localhost")
            #expect(again.summary["count"] as? Int == 2)
            await bob.close()
            await carol.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func aBurstOfFiveGivesExactlyTwoPushesWithCountsOneAndFive(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 2) { bed in
            let key = try await bed.enableDevice(token: "token-burst")
            let bob = try await bed.client("bob")
            for index in 1...5 {
                try bed.message(from: bob, to: "alice@localhost", body: "burst \(index)")
            }
            let first = try await bed.nextPush(key: key)
            #expect(first.summary["count"] as? Int == 1)
            let second = try await bed.nextPush(key: key, timeout: .seconds(10))
            #expect(second.summary["count"] as? Int == 5)
            #expect(first.push.collapse == second.push.collapse)
            await bed.expectNoPush(within: .seconds(3))
            await bob.close()
        }
    }

    /// The component removes a dead token at once and answers the server `cancel`; each server drops
    /// its copy in its own way: Prosody after push_max_errors (16) more errors that are not `wait` (the
    /// tombstone answers them `cancel`), ejabberd's mod_push at the first error, bridged or not. After
    /// that no publish comes.
    @Test(arguments: [
        PushTestbed.Server.prosodyBridged, .prosody13Bridged, .ejabberd, .ejabberdBridged, .ejabberd24Bridged,
    ])
    func aDeadTokenIsRemovedOnTheComponentAndOnTheServer(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            try await bed.enableDevice(token: "token-dead")
            bed.appServer.script(node: "token-dead", answer: .cancel)
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "anyone there?")
            _ = try await bed.appServer.nextPush()
            try await waitUntil("the server is answered cancel") { bed.statistic("answers.cancel") == 1 }
            #expect(try await bed.storedRegistration(token: "token-dead") == nil)
            // The tombstone answers Prosody's next 16 publishes; ejabberd sends none.
            let publishesAfterRemoval = server.prosodyRelease != nil ? 16 : 0
            for index in 0..<publishesAfterRemoval {
                try bed.message(from: bob, to: "alice@localhost", body: "again \(index)")
            }
            let answered = Int64(1 + publishesAfterRemoval)
            try await waitUntil("the server has been answered cancel \(answered) times") {
                bed.statistic("answers.cancel") == answered
            }
            // The count comes just before the answer is sent: a round trip through the server after it
            // lets the server act on the last answer before the next message.
            try await bed.waitUntilRouted()
            try bed.message(from: bob, to: "alice@localhost", body: "after removal")
            try await Task.sleep(for: .seconds(2))
            #expect(bed.statistic("answers.cancel") == answered, "the server still pushes for a dead token")
            #expect(bed.appServer.pushes.count == 1)
            await bob.close()
        }
    }

    @Test func waitFromTheAppServerIsRetriedUntilItIsTaken() async throws {
        try await PushTestbed.with(.prosodyBridged) { bed in
            let key = try await bed.enableDevice(token: "token-wait")
            bed.appServer.script(node: "token-wait", answer: .wait)
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "retry me")
            let refused = try await bed.nextPush(key: key)
            try await waitUntil("the server is answered wait") { bed.statistic("answers.wait") == 1 }
            bed.appServer.script(node: "token-wait", answer: .result)
            let retried = try await bed.nextPush(key: key, timeout: .seconds(10))
            #expect(retried.summary["count"] as? Int == 1)
            #expect(retried.push.envelope != refused.push.envelope, "each attempt is sealed afresh")
            let store = try SQLitePushStore(.file(path: bed.storePath))
            try await waitUntil("the retry is done") { try await store.nextRetry() == nil }
            #expect(try await store.registration(domain: "localhost", token: "token-wait") != nil)
            await bob.close()
        }
    }

    @Test(arguments: [PushTestbed.Server.prosodyStock, .prosody13Stock])
    func stockProsodyPublishesAreSealedWithTheSenderAsTheChat(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-stock")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "stock mode")
            let (push, summary) = try await bed.nextPush(key: key, secrets: ["stock mode"])
            #expect(push.kind == nil)
            #expect(summary["account"] as? String == "")
            #expect(summary["chat"] as? String == "bob@localhost")
            await bob.close()
        }
    }

    /// The sender stock mod_push names is the chat: a full JID in 23.01, a bare one in 24.12.
    @Test(arguments: [PushTestbed.Server.ejabberd, .ejabberd24])
    func stockEjabberdPublishesAreSealedWithTheSenderAsTheChat(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-ej")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "from ejabberd")
            let (_, summary) = try await bed.nextPush(key: key, secrets: ["from ejabberd"])
            #expect(summary["kind"] as? String == "message")
            #expect(summary["chat"] as? String == "bob@localhost")
            await bob.close()
        }
    }
}

extension PushEndToEndTests {
    /// Stock ejabberd (23.01 and 24.12) sends anything but a message with a body as an empty
    /// notification: the component cannot tell a call from a presence there, so it is a silent wake,
    /// at most one a minute.
    @Test(arguments: [PushTestbed.Server.ejabberd, .ejabberd24])
    func ejabberdsEmptyNotificationsBecomeRateLimitedWakes(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            let key = try await bed.enableDevice(token: "token-wake")
            let bob = try await bed.client("bob")
            try bed.propose(from: bob, to: "alice@localhost", sid: "ej-call-1")
            let wake = try await bed.nextPush(key: key)
            #expect(wake.push.kind == "wake")
            #expect(wake.push.collapse == nil)
            #expect(wake.summary["kind"] as? String == "wake")
            #expect(wake.summary["account"] as? String == "")
            try bed.propose(from: bob, to: "alice@localhost", sid: "ej-call-2")
            try await waitUntil("the second one is rate-limited") { bed.statistic("dropped.rate-limit") == 1 }
            await bed.expectNoPush()
            await bob.close()
        }
    }
}
