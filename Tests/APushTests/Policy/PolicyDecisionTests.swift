import TestSupport
import Foundation
import Store
import Testing

@testable import APush

@Suite struct PolicyDecisionTests {
    /// One row of the table: under `policy`, `event` at `time` (ISO 8601, UTC) gets `verdict`.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var policy: PushPolicy
        var event: PushEvent
        var time: String
        var verdict: PolicyDecision.Verdict

        init(
            _ name: String, _ policy: PushPolicy, _ event: PushEvent, at time: String = "2026-01-15T12:00:00Z",
            _ verdict: PolicyDecision.Verdict
        ) {
            self.name = name
            self.policy = policy
            self.event = event
            self.time = time
            self.verdict = verdict
        }

        var testDescription: String { name }
    }

    static func policy(_ json: String) -> PushPolicy {
        // Through the decoder, as stored policies are read, so `muted` is normalised as in service.
        try! PushPolicy.decode(json: json)
    }

    static func chat(_ chat: String = "bob@localhost") -> PushEvent {
        .message(MessageNotice(chat: chat, from: chat, groupchat: false, mention: false, id: "s1", dedupeKey: nil))
    }

    static func room(mention: Bool) -> PushEvent {
        .message(
            MessageNotice(
                chat: "room@conference.localhost", from: "bob", groupchat: true, mention: mention,
                id: "r1", dedupeKey: nil))
    }

    static let call = PushEvent.call(
        CallNotice(
            chat: "bob@localhost", from: "bob@localhost/laptop", sid: "c1",
            media: ["audio"]))
    static let callEnded = PushEvent.callEnded(sid: "c1", by: "bob@localhost", answeredElsewhere: false)
    static let read = PushEvent.read(chat: "bob@localhost")

    static let nightPrague = #"{"quietHours":"22:00-07:00","timezone":"Europe/Prague"}"#
    static let nightNewYork = #"{"quietHours":"22:00-07:00","timezone":"America/New_York"}"#
    static let afternoonUTC = #"{"quietHours":"13:00-15:00"}"#

    static let cases: [Case] = [
        Case("a message by default", PushPolicy(), chat(), .deliver),
        Case("messages off", policy(#"{"messages":false}"#), chat(), .silence),
        Case(
            "a muted chat, stored as a full JID in capitals", policy(#"{"muted":["Bob@LocalHost/phone"]}"#),
            chat(), .silence),
        Case("another chat than the muted one", policy(#"{"muted":["carol@localhost"]}"#), chat(), .deliver),
        Case("groupchat always, no mention", PushPolicy(), room(mention: false), .deliver),
        Case(
            "groupchat on-mention, no mention", policy(#"{"groupchat":"on-mention"}"#), room(mention: false),
            .silence),
        Case(
            "groupchat on-mention, mentioned", policy(#"{"groupchat":"on-mention"}"#), room(mention: true),
            .deliver),
        Case("groupchat never, even mentioned", policy(#"{"groupchat":"never"}"#), room(mention: true), .silence),
        Case("groupchat never leaves one-to-one chats alone", policy(#"{"groupchat":"never"}"#), chat(), .deliver),

        // A plain range, in UTC: start inclusive, end exclusive.
        Case("13:00-15:00 at 12:59", policy(afternoonUTC), chat(), at: "2026-01-15T12:59:00Z", .deliver),
        Case("13:00-15:00 at 13:00", policy(afternoonUTC), chat(), at: "2026-01-15T13:00:00Z", .wakeInstead),
        Case("13:00-15:00 at 14:59", policy(afternoonUTC), chat(), at: "2026-01-15T14:59:00Z", .wakeInstead),
        Case("13:00-15:00 at 15:00", policy(afternoonUTC), chat(), at: "2026-01-15T15:00:00Z", .deliver),

        // Wrapping midnight in Prague (CET, UTC+1 in January; CEST, UTC+2 in summer).
        Case("Prague 21:59 CET", policy(nightPrague), chat(), at: "2026-01-15T20:59:00Z", .deliver),
        Case("Prague 22:00 CET", policy(nightPrague), chat(), at: "2026-01-15T21:00:00Z", .wakeInstead),
        Case("Prague 00:30 CET", policy(nightPrague), chat(), at: "2026-01-15T23:30:00Z", .wakeInstead),
        Case("Prague 06:59 CET", policy(nightPrague), chat(), at: "2026-01-16T05:59:00Z", .wakeInstead),
        Case("Prague 07:00 CET", policy(nightPrague), chat(), at: "2026-01-16T06:00:00Z", .deliver),
        Case("Prague 22:00 CEST (21:00 CET)", policy(nightPrague), chat(), at: "2026-07-01T20:00:00Z", .wakeInstead),
        Case(
            "Prague 06:59 CEST on the day DST starts", policy(nightPrague), chat(), at: "2026-03-29T04:59:00Z",
            .wakeInstead),
        Case(
            "Prague 07:30 CEST on the day DST starts (06:30 CET)", policy(nightPrague), chat(),
            at: "2026-03-29T05:30:00Z", .deliver),

        // New York (EST, UTC-5; EDT, UTC-4 from 2026-03-08 02:00).
        Case("New York 06:30 EST", policy(nightNewYork), chat(), at: "2026-01-15T11:30:00Z", .wakeInstead),
        Case(
            "New York 07:30 EDT on the day DST starts (06:30 EST)", policy(nightNewYork), chat(),
            at: "2026-03-08T11:30:00Z", .deliver),
        Case(
            "New York 06:59 EDT on the day DST starts", policy(nightNewYork), chat(), at: "2026-03-08T10:59:00Z",
            .wakeInstead),
        Case(
            "New York 22:00 EDT (02:00 UTC)", policy(nightNewYork), chat(), at: "2026-07-02T02:00:00Z",
            .wakeInstead),
        Case("New York 21:59 EDT", policy(nightNewYork), chat(), at: "2026-07-02T01:59:00Z", .deliver),

        Case(
            "quiet hours with quietMessages none",
            policy(#"{"quietHours":"13:00-15:00","quietMessages":"none"}"#), chat(), at: "2026-01-15T14:00:00Z",
            .silence),
        Case(
            "quiet hours with wakes off", policy(#"{"quietHours":"13:00-15:00","wakes":false}"#), chat(),
            at: "2026-01-15T14:00:00Z", .silence),
        Case(
            "quiet hours do not unmute a chat", policy(#"{"quietHours":"13:00-15:00","muted":["bob@localhost"]}"#),
            chat(), at: "2026-01-15T14:00:00Z", .silence),
        Case(
            "quiet hours for a group chat not mentioning",
            policy(#"{"quietHours":"13:00-15:00","groupchat":"on-mention"}"#),
            room(mention: false), at: "2026-01-15T14:00:00Z", .silence),

        Case("a call", PushPolicy(), call, .deliver),
        Case("a call from a muted chat", policy(#"{"muted":["bob@localhost"]}"#), call, .deliver),
        Case("a call in quiet hours", policy(afternoonUTC), call, at: "2026-01-15T14:00:00Z", .deliver),
        Case("a call with messages off", policy(#"{"messages":false}"#), call, .deliver),
        Case("a call with calls off", policy(#"{"calls":false}"#), call, .drop),

        Case("a missed call", PushPolicy(), callEnded, .deliver),
        Case("a missed call with messages off", policy(#"{"messages":false}"#), callEnded, .drop),
        Case("a missed call with calls off", policy(#"{"calls":false}"#), callEnded, .deliver),

        Case("a read", PushPolicy(), read, .deliver),
        Case("a read of a muted chat", policy(#"{"muted":["bob@localhost"]}"#), read, .deliver),
        Case("a read in quiet hours", policy(afternoonUTC), read, at: "2026-01-15T14:00:00Z", .deliver),
        Case("a read with reads off", policy(#"{"reads":false}"#), read, .drop),

        Case("a wake", PushPolicy(), .wake, .deliver),
        Case("a wake in quiet hours", policy(afternoonUTC), .wake, at: "2026-01-15T14:00:00Z", .deliver),
        Case("a wake with wakes off", policy(#"{"wakes":false}"#), .wake, .drop),
    ]

    static func timestamp(_ iso: String) throws -> Timestamp {
        let date = try #require(ISO8601DateFormatter().date(from: iso))
        return Timestamp(date.timeIntervalSince1970 * 1000)
    }

    @Test(arguments: cases)
    func verdict(_ row: Case) throws {
        #expect(PolicyDecision.decide(row.policy, event: row.event, at: try Self.timestamp(row.time)) == row.verdict)
    }

    @Test func withoutQuietHoursNoTimeIsQuiet() throws {
        for hour in 0..<24 {
            let at = try Self.timestamp("2026-01-15T00:00:00Z") + Timestamp(hour) * 3_600_000
            #expect(!PolicyDecision.isQuiet(PushPolicy(), at: at))
        }
    }

    @Test func quietHoursCoverTheirMinutesAcrossTheDay() throws {
        let policy = Self.policy(Self.nightPrague)
        let midnightUTC = try Self.timestamp("2026-01-15T00:00:00Z")
        let quietMinutes = (0..<1440).filter { minute in
            PolicyDecision.isQuiet(policy, at: midnightUTC + Timestamp(minute) * 60_000)
        }
        // 22:00-07:00 is nine hours; in CET that is 21:00-06:00 UTC.
        #expect(quietMinutes.count == 9 * 60)
        #expect(quietMinutes.contains(21 * 60) && !quietMinutes.contains(21 * 60 - 1))
        #expect(quietMinutes.contains(6 * 60 - 1) && !quietMinutes.contains(6 * 60))
    }
}

/// PushService.decide applying the policy stored for the account (config defaults ← stored defaults
/// ← the account's override), through the real store.
@Suite struct PolicyEnforcementTests {
    static let account = "alice@localhost"

    static func groupchat(id: String, body: String) -> String {
        "<message xmlns='jabber:client' type='groupchat' id='\(id)' from='room@conference.localhost/bob'"
            + " to='alice@localhost'><body>\(body)</body>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='r-\(id)' by='room@conference.localhost'/></message>"
    }

    func setPolicy(_ harness: Harness, _ json: String?) async throws {
        try await harness.service.store.setPolicy(account: Self.account, json: json)
    }

    @Test func aMutedChatCountsWithoutPushingAndUnmutingShowsTheCount() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"muted":["Bob@localhost"]}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        #expect(harness.upstream.isEmpty)
        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        let chats = try await harness.store.chats(registrationID: registration.id)
        #expect(chats.map(\.count) == [2])
        #expect(chats.first?.windowEndsAt == nil)

        try await setPolicy(harness, nil)
        try await harness.publishBridged(Stanzas.chat(id: "m3"))
        let summaries = try await harness.summaries()
        try #require(summaries.count == 1)
        #expect(summaries[0]["count"] as? Int == 3)
        #expect(summaries[0]["chat"] as? String == "bob@localhost")
    }

    @Test func messagesOffCountsWithoutPushing() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"messages":false}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(harness.upstream.isEmpty)
        #expect(harness.service.statistics.sinceStart["dropped.policy"] == 1)
    }

    @Test func aHiddenSenderLeavesOutChatSenderAndID() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"sender":"hidden"}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        let summary = try #require(try await harness.summaries().first)
        #expect(summary["kind"] as? String == "message")
        #expect(summary["chat"] as? String == "")
        #expect(summary["from"] == nil)
        #expect(summary["id"] == nil)
        #expect(summary["count"] as? Int == 1)
        #expect(!(try await harness.upstream[0].summary(with: harness.device)).contains("bob"))
    }

    /// ManualClock.start is 15:26:40 UTC.
    @Test func inQuietHoursAMessageBecomesARateLimitedWake() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"quietHours":"15:00-16:00"}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        try #require(harness.upstream.count == 1)
        #expect(harness.upstream[0].kind == "wake")
        #expect(try await harness.summaries()[0]["kind"] as? String == "wake")
        #expect(try await harness.summaries()[0]["chat"] == nil)
        #expect(harness.service.statistics.sinceStart["dropped.rate-limit"] == 1)

        harness.clock.advance(seconds: 61)
        try await harness.publishBridged(Stanzas.chat(id: "m3"))
        #expect(harness.upstream.map(\.kind) == ["wake", "wake"])
    }

    @Test func inQuietHoursWithQuietMessagesNoneNothingIsSent() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"quietHours":"15:00-16:00","quietMessages":"none"}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(harness.upstream.isEmpty)
    }

    @Test func outsideQuietHoursInTheAccountsZoneMessagesPush() async throws {
        let harness = try Harness()
        // 15:26 UTC is 10:26 in New York: outside 15:00-16:00 there.
        try await setPolicy(harness, #"{"quietHours":"15:00-16:00","timezone":"America/New_York"}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(harness.upstream.map(\.kind) == [nil])
    }

    @Test func callsRingInQuietHoursAndFromMutedChats() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"quietHours":"15:00-16:00","muted":["bob@localhost"]}"#)
        try await harness.publishBridged(Stanzas.propose(sid: "s1"))
        #expect(harness.upstream.map(\.kind) == ["voip"])
    }

    @Test func callsOffSendsNoVoIPPush() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"calls":false}"#)
        try await harness.publishBridged(Stanzas.propose(sid: "s1"))
        #expect(harness.upstream.isEmpty)
    }

    @Test func readsOffSendsNoReadPushButStillResetsTheCount() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await setPolicy(harness, #"{"reads":false}"#)
        try await harness.publishBridged(Stanzas.displayedCarbon())
        #expect(harness.upstream.count == 1)

        harness.clock.advance(seconds: 11)
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        let summaries = try await harness.summaries()
        #expect(summaries.map { $0["kind"] as? String } == ["message", "message"])
        #expect(summaries.last?["count"] as? Int == 1)
    }

    @Test func withReadsOnTheSameReadPushes() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.displayedCarbon())
        #expect(harness.upstream.map(\.kind) == [nil, "read"])
    }

    @Test func groupchatOnMentionPushesOnlyMentions() async throws {
        let harness = try Harness()
        try await setPolicy(harness, #"{"groupchat":"on-mention"}"#)
        try await harness.publishBridged(Self.groupchat(id: "g1", body: "lunch anyone?"))
        #expect(harness.upstream.isEmpty)
        try await harness.publishBridged(Self.groupchat(id: "g2", body: "what do you think, alice?"))
        let summaries = try await harness.summaries()
        try #require(summaries.count == 1)
        #expect(summaries[0]["mention"] as? Bool == true)
        #expect(summaries[0]["count"] as? Int == 2)
    }

    @Test func theWindowIsClampedToTheOperatorsBounds() async throws {
        var settings = APushSettings()
        settings.coalesceMinSeconds = 5
        settings.coalesceMaxSeconds = 20
        let harness = try Harness(settings: settings)
        try await setPolicy(harness, #"{"coalesceSeconds":0}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        harness.clock.advance(seconds: 1)
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        #expect(harness.upstream.count == 1, "a 0 s window is raised to 5 s: the second message is held")
        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(try await harness.store.chats(registrationID: registration.id).map(\.windowMilliseconds) == [5000])

        try await setPolicy(harness, #"{"coalesceSeconds":600}"#)
        harness.clock.advance(seconds: 30)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 2, "the held message went at the end of the 5 s window")
        harness.clock.advance(seconds: 30)
        try await harness.publishBridged(Stanzas.chat(id: "m3"))
        #expect(harness.upstream.count == 3)
        #expect(try await harness.store.chats(registrationID: registration.id).map(\.windowMilliseconds) == [20_000])
        harness.clock.advance(seconds: 21)
        try await harness.publishBridged(Stanzas.chat(id: "m4"))
        #expect(harness.upstream.count == 4, "a 600 s window is lowered to 20 s: past it a message pushes")
    }

    @Test func storedDefaultsOverrideTheConfigAndTheAccountOverridesBoth() async throws {
        var settings = APushSettings()
        settings.defaults.messages = false
        settings.defaults.timezone = "Europe/Prague"
        let harness = try Harness(settings: settings)
        try await harness.publishBridged(Stanzas.chat(id: "m1", from: "bob@localhost/a"))
        #expect(harness.upstream.isEmpty, "the config's default: no messages")

        try await harness.service.store.setPolicy(account: nil, json: #"{"messages":true,"sender":"hidden"}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/a"))
        #expect(harness.upstream.count == 1, "the stored defaults turn messages on")

        try await setPolicy(harness, #"{"messages":false}"#)
        try await harness.publishBridged(Stanzas.chat(id: "m3", from: "dave@localhost/a"))
        #expect(harness.upstream.count == 1, "the account's override turns them off again")

        let effective = try await harness.service.policy(for: Self.account)
        #expect(!effective.messages)
        #expect(effective.sender == .hidden)
        #expect(effective.timezone == "Europe/Prague")
        let defaults = try await harness.service.policy(for: nil)
        #expect(defaults.messages)
        #expect(try await harness.service.policy(for: "bob@localhost") == defaults)
    }
}
