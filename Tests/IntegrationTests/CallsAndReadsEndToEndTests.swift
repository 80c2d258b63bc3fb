import Foundation
import Sealing
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

/// Calls, reads and duplicates end to end, on each bridged server: what only a bridged publish (the
/// account named, the stanza forwarded) lets the component tell apart. A suite of its own beside
/// PushEndToEndTests, so the two serialized suites run side by side.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CallsAndReadsEndToEndTests {
    @Test(arguments: PushTestbed.bridgedServers)
    func aCallReachesTheCallsOnlyRegistrationAsVoipAndNothingElseReachesIt(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            let phone = try await bed.enableDevice(token: "token-fcm", resource: "phone", reads: true)
            let pushKit = try await bed.enableDevice(token: "token-pushkit", resource: "pushkit", calls: "only")
            let bob = try await bed.client("bob", resource: "laptop")

            try bed.propose(from: bob, to: "alice@localhost", sid: "sid-1", media: ["audio", "video"])
            let call = try await bed.nextPush(key: pushKit)
            #expect(call.push.node == "token-pushkit")
            #expect(call.push.kind == "voip")
            #expect(call.push.collapse == nil)
            #expect(call.summary["kind"] as? String == "call")
            #expect(call.summary["from"] as? String == "bob@localhost/laptop")
            let details = try #require(call.summary["call"] as? [String: Any])
            #expect(details["sid"] as? String == "sid-1")
            #expect(details["media"] as? [String] == ["audio", "video"])
            await bed.expectNoPush(within: .seconds(1))  // the message registration takes no calls

            try bed.message(from: bob, to: "alice@localhost", body: "call me back")
            let message = try await bed.nextPush(key: phone)
            #expect(message.push.node == "token-fcm")
            await bed.expectNoPush(within: .seconds(1))  // and the calls-only one takes no messages
            #expect(bed.appServer.pushes.filter { $0.node == "token-pushkit" }.count == 1)
            await bob.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func aReadOnTheSecondDeviceSendsAReadPushAfterABurstAndCancelsTheHeldOne(on server: PushTestbed.Server) async throws
    {
        // A window long enough for the laptop to log in and read on a loaded machine.
        try await PushTestbed.with(server, coalesceSeconds: 10) { bed in
            let key = try await bed.enableDevice(token: "token-read", reads: true)
            let bob = try await bed.client("bob")
            for index in 1...3 {
                try bed.message(from: bob, to: "alice@localhost", body: "read me \(index)", id: "r\(index)")
            }
            let first = try await bed.nextPush(key: key)
            #expect(first.summary["count"] as? Int == 1)
            // The read must follow the burst: the first push may come before the server has passed on
            // the others.
            try await waitUntil("the rest of the burst is held") { bed.statistic("coalesced.held") == 2 }
            let laptop = try await bed.client("alice", resource: "laptop")
            try laptop.send(
                Element.message(
                    type: .chat, id: "seen", to: try JID("bob@localhost"),
                    children: [
                        Element("displayed", namespace: Namespace.chatMarkers, ["id": "r3"])
                    ], namespace: Namespace.client))
            let read = try await bed.nextPush(key: key)
            #expect(read.push.kind == "read")
            #expect(read.summary["kind"] as? String == "read")
            #expect(read.summary["chat"] as? String == "bob@localhost")
            // The held push of the burst was cancelled by the read: nothing comes when its window ends.
            await bed.expectNoPush(within: .seconds(11))
            await laptop.close()
            await bob.close()
        }
    }

    /// XEP-0353: the laptop accepts the call (to the account's own bare JID, which the server archives
    /// and pushes to the phone no session holds), so the caller's later retract is no missed call.
    @Test(arguments: PushTestbed.bridgedServers)
    func aCallAcceptedOnAnotherDeviceIsNoMissedCall(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-accepted", calls: "1")
            let bob = try await bed.client("bob", resource: "laptop")
            try bed.propose(from: bob, to: "alice@localhost", sid: "sid-accepted")
            #expect(try await bed.nextPush(key: key).push.kind == "voip")
            let laptop = try await bed.client("alice", resource: "laptop")
            try laptop.send(
                try Element.parse(
                    """
                    <message xmlns='jabber:client' type='chat' to='alice@localhost' id='accept-1'>\
                    <accept xmlns='urn:xmpp:jingle-message:0' id='sid-accepted'/><store xmlns='urn:xmpp:hints'/></message>
                    """))
            // Both servers push the accept twice (archived as sent and as received): either ends the call.
            try await waitUntil("the component learns the call was answered") {
                bed.statistic("events.call-ended") >= 1
            }
            try bob.send(
                try Element.parse(
                    """
                    <message xmlns='jabber:client' type='chat' to='alice@localhost' id='retract-1'>\
                    <retract xmlns='urn:xmpp:jingle-message:0' id='sid-accepted'/><store xmlns='urn:xmpp:hints'/></message>
                    """))
            try bed.message(from: bob, to: "alice@localhost", body: "talk later")
            let next = try await bed.nextPush(key: key)
            #expect(next.summary["kind"] as? String == "message")
            #expect(next.summary["missed"] == nil, "the retract of an answered call made a missed call")
            await bed.expectNoPush(within: .seconds(2))
            await laptop.close()
            await bob.close()
        }
    }

    /// XEP-0490: the laptop publishes where the chat was read to its own PEP node; the phone, which no
    /// live session holds, gets a read push (the bridge picks the publish up from the server's PEP).
    @Test(arguments: PushTestbed.bridgedServers)
    func aDisplayedMarkerPublishedToTheAccountsPEPIsARead(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-mds", reads: true)
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "read me", id: "mds-1")
            #expect(try await bed.nextPush(key: key).summary["kind"] as? String == "message")
            let laptop = try await bed.client("alice", resource: "laptop")
            _ = try await laptop.query(
                .set, to: nil,
                payload: try Element.parse(
                    """
                    <pubsub xmlns='http://jabber.org/protocol/pubsub'><publish node='urn:xmpp:mds:displayed:0'>\
                    <item id='bob@localhost'><displayed xmlns='urn:xmpp:mds:displayed:0'>\
                    <stanza-id xmlns='urn:xmpp:sid:0' id='mds-stanza-1' by='alice@localhost'/></displayed></item>\
                    </publish></pubsub>
                    """))
            let read = try await bed.nextPush(key: key)
            #expect(read.push.kind == "read")
            #expect(read.summary["chat"] as? String == "bob@localhost")
            await laptop.close()
            await bob.close()
        }
    }

    /// Issue 20, item 4: M1 is pushed (count 1) and the App Server answers `wait`; the chat is read
    /// (count 0), then M2 comes (count 1 again) and is pushed. M1's retry says the same count, but its
    /// chat moved on since: it is dropped, never sent after M2 under the same collapse tag.
    @Test(arguments: PushTestbed.bridgedServers)
    func aRetryOfAMessageNeverLandsAfterANewerPushThatSaysTheSameCount(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { try await Self.staleRetryIsDropped(on: $0) }
    }

    /// M1 answered `wait` until its next retry is 8 s away; a read and M2 (the same count) meanwhile:
    /// M1's retry is dropped and counted, and the device gets the read and M2 in that order.
    static func staleRetryIsDropped(on bed: PushTestbed) async throws {
        let key = try await bed.enableDevice(token: "token-stale", reads: true)
        bed.appServer.script(node: "token-stale", answer: .wait)
        let bob = try await bed.client("bob")
        try bed.message(from: bob, to: "alice@localhost", body: "first", id: "m1")
        // Answered `wait` three times (retried 2 s, then 4 s later): its next retry is 8 s away.
        var m1: (push: ReceivedPush, summary: [String: Any])?
        for _ in 1...3 { m1 = try await bed.nextPush(key: key) }
        let first = try #require(m1)
        #expect(first.summary["count"] as? Int == 1)
        bed.appServer.script(node: "token-stale", answer: .result)

        let laptop = try await bed.client("alice", resource: "laptop")
        try laptop.send(
            Element.message(
                type: .chat, id: "seen", to: try JID("bob@localhost"),
                children: [Element("displayed", namespace: Namespace.chatMarkers, ["id": "m1"])],
                namespace: Namespace.client))
        #expect(try await bed.nextPush(key: key).push.kind == "read")
        await laptop.close()
        try bed.message(from: bob, to: "alice@localhost", body: "second", id: "m2")
        let second = try await bed.nextPush(key: key)
        #expect(second.summary["count"] as? Int == 1, "the count came back to M1's")
        #expect(second.summary["id"] as? String != first.summary["id"] as? String)
        #expect(second.push.collapse == first.push.collapse)

        try await waitUntil("M1's retry comes due and is dropped", timeout: .seconds(30)) {
            bed.statistic("pushes.message.superseded") == 1
        }
        await bed.expectNoPush(within: .seconds(1))
        // What reached the device, in order: the read, then M2, and nothing after it.
        #expect(bed.appServer.taken.map(\.kind) == ["read", nil])
        #expect(bed.appServer.taken.last?.envelope == second.push.envelope)
        await bob.close()
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func duplicatesOfAMessageAndOfACallArePushedOnce(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-dup", calls: "1")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "once", id: "same-id")
            try bed.message(from: bob, to: "alice@localhost", body: "once", id: "same-id")
            _ = try await bed.nextPush(key: key)
            try bed.propose(from: bob, to: "alice@localhost", sid: "same-call")
            try bed.propose(from: bob, to: "alice@localhost", sid: "same-call")
            let call = try await bed.nextPush(key: key)
            #expect(call.push.kind == "voip")
            await bed.expectNoPush(within: .seconds(2))
            #expect(bed.statistic("deduplicated") == 2)
            await bob.close()
        }
    }
}
