import Foundation
import Sealing
import Testing
import TestSupport

@testable import APush
@testable import Store

@Suite struct BadgeTests {
    @Test func aChatsChangeMovesTheTotalUnlessTheChatIsLeftOut() {
        let badge = Badge(excluded: ["muted@localhost"], before: 6)
        #expect(badge.after(chat: "bob@localhost", countBefore: 2, countAfter: 3) == 7)
        #expect(badge.after(chat: "bob@localhost", countBefore: 2, countAfter: 0) == 4)
        // The count restarted (stock mode's hour, or a chat begun anew).
        #expect(badge.after(chat: "bob@localhost", countBefore: 5, countAfter: 1) == 2)
        #expect(badge.after(chat: "muted@localhost", countBefore: 2, countAfter: 3) == 6)
        #expect(badge.after(chat: "muted@localhost", countBefore: 2, countAfter: 0) == 6)
        // Never below nothing, whatever the store said.
        #expect(Badge(excluded: [], before: 0).after(chat: "bob@localhost", countBefore: 3, countAfter: 0) == 0)
    }

    @Test func theMutedChatsAreLeftOutUnlessThePolicyCountsThem() throws {
        var policy = PushPolicy()
        #expect(Badge.excludedChats(policy).isEmpty)
        policy.muted = ["crew@muc.localhost", "muted@localhost"]
        #expect(Badge.excludedChats(policy) == ["crew@muc.localhost", "muted@localhost"])
        policy.badgeMuted = true
        #expect(Badge.excludedChats(policy).isEmpty)
    }
}

extension PushServiceTests {
    /// The unread total each message and read summary carries (Badge).
    @Suite struct Badges {
        static func message(_ id: String, from sender: String) -> String {
            Stanzas.chat(id: id, from: "\(sender)@localhost/pc")
        }

        static func badges(_ harness: Harness) async throws -> [String] {
            try await harness.summaries().map { summary in
                let kind = summary["kind"] as? String ?? "?"
                let chat = (summary["chat"] as? String ?? "").split(separator: "@").first ?? ""
                return "\(kind) \(chat) \(summary["badge"].map { "\($0)" } ?? "none")"
            }
        }

        /// Three chats, then a read of one: each push carries the total of every chat, the read's the
        /// total without the chat read, and the push held for a window's end the total as it is then.
        @Test func theBadgeIsTheTotalOverTheChatsAndAReadSendsTheNewOne() async throws {
            let harness = try Harness()
            try await harness.publishBridged(Self.message("b1", from: "bob"))
            try await harness.publishBridged(Self.message("c1", from: "carol"))
            try await harness.publishBridged(Self.message("c2", from: "carol"))
            try await harness.publishBridged(Self.message("d1", from: "dave"))
            try await harness.publishBridged(Self.message("d2", from: "dave"))
            try await harness.publishBridged(Self.message("d3", from: "dave"))
            harness.clock.advance(seconds: 1)
            try await harness.publishBridged(Stanzas.displayedCarbon(chat: "bob@localhost"))
            harness.clock.advance(seconds: 20)
            try await harness.processDueWork()
            let badges = try await Self.badges(harness)
            #expect(badges.prefix(4) == ["message bob 1", "message carol 2", "message dave 4", "read bob 5"])
            // The two windows end together, in no set order.
            #expect(Set(badges.dropFirst(4)) == ["message carol 5", "message dave 5"])
            #expect(badges.count == 6)
        }

        /// A muted chat counts but does not show, unless the policy's `badge-muted` says so.
        @Test(arguments: [
            (#"{"muted":["carol@localhost"]}"#, 1), (#"{"muted":["carol@localhost"],"badgeMuted":true}"#, 3),
        ])
        func aMutedChatIsLeftOutUnlessThePolicyCountsIt(policy: String, badge: Int) async throws {
            let harness = try Harness()
            try await harness.store.setPolicy(account: "alice@localhost", json: policy)
            try await harness.publishBridged(Self.message("c1", from: "carol"))
            try await harness.publishBridged(Self.message("c2", from: "carol"))
            try await harness.publishBridged(Self.message("b1", from: "bob"))
            #expect(try await Self.badges(harness) == ["message bob \(badge)"])
            // A read of the muted chat changes nothing shown; the next message says so.
            try await harness.publishBridged(Stanzas.displayedCarbon(chat: "carol@localhost"))
            try await harness.publishBridged(Self.message("d1", from: "dave"))
            #expect(try await Self.badges(harness) == ["message bob \(badge)", "message dave 2"])
        }

        /// A stored push sent again (the App Server said wait) carries the total it was decided with.
        @Test func aRetryCarriesTheBadgeItWasDecidedWith() async throws {
            let harness = try Harness()
            harness.sender.script(.error(type: "wait", condition: "resource-constraint"))
            try await harness.publishBridged(Self.message("b1", from: "bob"))
            try await harness.publishBridged(Self.message("c1", from: "carol"))
            harness.clock.advance(seconds: 5)
            try await harness.processDueWork()
            #expect(try await Self.badges(harness) == ["message bob 1", "message carol 2", "message bob 1"])
        }

        /// In stock mode no read ever reaches the component: a total could only grow, so none is sent.
        @Test func aStockPublishCarriesNoBadge() async throws {
            let harness = try Harness()
            let xml = Fixture.stockMessage.replacingOccurrences(
                of: Stanzas.fixtureKey, with: Base64.encode(harness.device.publicKey))
            try await harness.publish(xml)
            let summary = try #require(try await harness.summaries().first)
            #expect(summary["count"] as? Int == 1)
            #expect(summary["badge"] == nil)
        }
    }
}
