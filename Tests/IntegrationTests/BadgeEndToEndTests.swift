import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

/// Issue 22 item 5, end to end on each server with its bridge: every message push carries the
/// account's unread total over its chats, and a read of one chat sends the new total.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct BadgeEndToEndTests {
    @Test(arguments: [PushTestbed.Server.prosodyBridged, .ejabberdBridged])
    func theBadgeCountsThreeChatsAndAReadOfOneSendsTheNewTotal(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            try await bed.server.register(user: "dave", password: "pw-dave")
            let key = try await bed.enableDevice(token: "token-badge", reads: true)
            let bob = try await bed.client("bob")
            let carol = try await bed.client("carol")
            let dave = try await bed.client("dave")
            // One at a time, so each push is the one its message made.
            var pushed: [String] = []
            for (sender, id) in [(bob, "b1"), (carol, "c1"), (carol, "c2"), (dave, "d1")] {
                try bed.message(from: sender, to: "alice@localhost", body: "unread \(id)", id: id)
                let push = try await bed.nextPush(key: key)
                let chat = push.summary["chat"] as? String ?? "?"
                pushed.append("\(chat) \(push.summary["count"] as? Int ?? -1) \(push.summary["badge"] as? Int ?? -1)")
            }
            #expect(
                pushed == [
                    "bob@localhost 1 1", "carol@localhost 1 2", "carol@localhost 2 3", "dave@localhost 1 4",
                ])

            let laptop = try await bed.client("alice", resource: "laptop")
            try laptop.send(
                Element.message(
                    type: .chat, id: "seen", to: try JID("carol@localhost"),
                    children: [Element("displayed", namespace: Namespace.chatMarkers, ["id": "c2"])],
                    namespace: Namespace.client))
            let read = try await bed.nextPush(key: key)
            #expect(read.push.kind == "read")
            #expect(read.summary["chat"] as? String == "carol@localhost")
            #expect(read.summary["badge"] as? Int == 2)

            // Bob's chat 2 and dave's 1: carol's read is gone from the total.
            try bed.message(from: bob, to: "alice@localhost", body: "unread b2", id: "b2")
            let next = try await bed.nextPush(key: key)
            #expect(next.summary["count"] as? Int == 2)
            #expect(next.summary["badge"] as? Int == 3)
            for client in [laptop, bob, carol, dave] { await client.close() }
        }
    }
}
