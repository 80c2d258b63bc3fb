import TestSupport
import Foundation
import Logging
import Sealing
import Synchronization
import Testing
import XMLStream
import XMPP

@testable import APush
@testable import Store

extension PushServiceTests {
    /// What one event means for one registration (PushService+Events).
    @Suite struct Events {
        @Test func aCallsOnlyRegistrationGetsTheCallAndNothingElse() async throws {
            let harness = try Harness()
            let options = harness.options(calls: "only", read: "1")
            try await harness.publishBridged(Stanzas.chat(id: "m1"), options: options)
            try await harness.publishBridged(Stanzas.propose(sid: "s1", media: ["audio", "video"]), options: options)
            try await harness.publishBridged(Stanzas.displayedCarbon(), options: options)
            try await harness.publishBridged(Stanzas.presence(), options: options)
            try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)
            harness.clock.advance(seconds: 30)
            try await harness.processDueWork()

            try #require(harness.upstream.count == 1)
            let push = harness.upstream[0]
            #expect(push.kind == "voip")
            #expect(push.collapse == nil)
            #expect(
                try await push.summary(with: harness.device)
                    == #"{"v":2,"kind":"call","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost/laptop","call":{"sid":"s1","media":["audio","video"]},"ts":1764430000}"#
            )
        }

        @Test func withoutApushCallsAPushedCallRetractedBecomesAMissedCallMessage() async throws {
            let harness = try Harness()
            let options = harness.options(calls: nil)
            try await harness.publishBridged(Stanzas.propose(sid: "s1"), options: options)
            #expect(harness.upstream.isEmpty)
            harness.clock.advance(seconds: 20)
            try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)

            try #require(harness.upstream.count == 1)
            let push = harness.upstream[0]
            #expect(push.kind == nil)
            #expect(push.collapse != nil)
            #expect(
                try await push.summary(with: harness.device)
                    == #"{"v":2,"kind":"message","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost","count":1,"badge":1,"missed":true,"call":{"sid":"s1","media":["audio"]},"ts":1764430020}"#
            )
        }

        @Test(arguments: ["accept", "proceed", "reject"])
        func aCallAnsweredElsewhereIsNoMissedCall(_ action: String) async throws {
            let harness = try Harness()
            let options = harness.options(calls: "1")
            try await harness.publishBridged(Stanzas.propose(sid: "s1"), options: options)
            try await harness.publishBridged(
                Stanzas.jingle(action, sid: "s1", from: "alice@localhost/desktop"),
                options: options)
            try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)
            #expect(harness.upstream.map(\.kind) == ["voip"])
        }

        @Test func aStrangersRetractOrAnswerLeavesThePushedCallToItsCaller() async throws {
            let harness = try Harness()
            let options = harness.options(calls: nil)
            try await harness.publishBridged(Stanzas.propose(sid: "s1"), options: options)
            for forged in [
                Stanzas.jingle("retract", sid: "s1", from: "mallory@localhost/x"),
                Stanzas.jingle("accept", sid: "s1", from: "mallory@localhost/x"),
                Stanzas.jingle("reject", sid: "s1", from: "bob@localhost/laptop"),
            ] {
                try await harness.publishBridged(forged, options: options)
            }
            // At most a wake: no missed call.
            #expect(harness.upstream.allSatisfy { $0.kind == "wake" })
            // The caller's own retract still makes the missed call.
            try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)
            let missed = try await harness.summaries().filter { $0["missed"] as? Bool == true }
            try #require(missed.count == 1)
            #expect(missed[0]["chat"] as? String == "bob@localhost")
        }

        @Test(arguments: EventClassifierSenderTests.forgedReads)
        func aStrangerCannotReadForTheAccount(_ forged: String) async throws {
            let harness = try Harness()
            for id in ["m1", "m2", "m3"] {
                try await harness.publishBridged(Stanzas.chat(id: id))
            }
            harness.clock.advance(seconds: 1)
            try await harness.publishBridged(forged)
            harness.clock.advance(seconds: 20)
            try await harness.processDueWork()
            // No read push (a wake at most), the held push still went with the whole count, and the
            // count goes on.
            #expect(harness.upstream.allSatisfy { $0.kind == nil || $0.kind == "wake" })
            #expect(try await harness.summaries().compactMap { $0["count"] as? Int } == [1, 3])
            try await harness.publishBridged(Stanzas.chat(id: "m4"))
            harness.clock.advance(seconds: 20)
            try await harness.processDueWork()
            #expect(try await harness.summaries().compactMap { $0["count"] as? Int } == [1, 3, 4])
        }

        /// A room whose JID once made the classifier's query path invalid and stopped the process (the
        /// room itself speaking, or an occupant).
        @Test(arguments: [
            "\u{0301}crew@muc.localhost/Zoë", "crew@muc.localhost\u{0D4E}", "crew@muc.localhost\u{0D4E}/Zoë",
        ])
        func aGroupchatFromAHostileRoomIsPushedUnderTheRoom(from: String) async throws {
            let harness = try Harness()
            let room = String(from.unicodeScalars.prefix { $0 != "/" })
            let message =
                "<message xmlns='jabber:client' type='groupchat' id='g1' from='\(from)' to='alice@localhost'>"
                + "<body>hi</body><stanza-id xmlns='urn:xmpp:sid:0' id='archived' by='\(room)'/></message>"
            #expect(try await harness.publishBridged(message) == nil)
            let summary = try #require(try await harness.summaries().first)
            #expect(summary["chat"] as? String == room)
            #expect(summary["id"] as? String == "archived")
        }

        /// Also a bridge's replay of a publish the component took (issue 25): answered result, pushed once.
        @Test func theSameMessageTwiceIsPushedOnce() async throws {
            let harness = try Harness()
            for _ in 0..<2 {
                #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == nil, "answered result")
                harness.clock.advance(seconds: 11)
                try await harness.processDueWork()
            }
            #expect(harness.upstream.count == 1)
            #expect(harness.service.statistics.sinceStart["deduplicated"] == 1)
        }

        @Test func theSameCallTwiceRingsOnce() async throws {
            let harness = try Harness()
            let key = Base64.encode(harness.device.publicKey)
            for xml in [Fixture.bridgeCall, Fixture.bridgeCallAgain] {
                #expect(try await harness.publish(xml.replacingOccurrences(of: Stanzas.fixtureKey, with: key)) == nil)
            }
            #expect(harness.upstream.map(\.kind) == ["voip"])
        }

        @Test func aReadCancelsTheHeldPushAndGoesOnlyToRegistrationsThatAskedForReads() async throws {
            let harness = try Harness()
            let wantsReads = harness.options(read: "1")
            let noReads = harness.options(read: nil)
            for id in ["m1", "m2", "m3"] {
                try await harness.publishBridged(Stanzas.chat(id: id), node: "tokA", options: wantsReads)
                try await harness.publishBridged(Stanzas.chat(id: id), node: "tokB", options: noReads)
            }
            #expect(harness.upstream.count == 2)
            harness.clock.advance(seconds: 1)
            try await harness.publishBridged(Stanzas.displayedCarbon(), node: "tokA", options: wantsReads)
            try await harness.publishBridged(Stanzas.displayedCarbon(), node: "tokB", options: noReads)
            harness.clock.advance(seconds: 20)
            try await harness.processDueWork()

            let pushes = harness.upstream
            #expect(pushes.map(\.node) == ["tokA", "tokB", "tokA"])
            let read = try #require(pushes.last)
            #expect(read.kind == "read")
            #expect(read.collapse == nil)
            #expect(
                try await read.summary(with: harness.device)
                    == #"{"v":2,"kind":"read","account":"alice@localhost","chat":"bob@localhost","badge":0,"ts":1764430001}"#
            )

            // The count restarted: the next message is count 1.
            try await harness.publishBridged(Stanzas.chat(id: "m4"), node: "tokA", options: wantsReads)
            #expect(try await harness.summaries().last?["count"] as? Int == 1)
        }

        /// In quiet hours a message goes as a wake (once per wake interval), counted as such; with
        /// `quiet-messages` none, or wakes off, nothing goes.
        @Test(arguments: [
            (#"{"quietHours":"15:00-16:00"}"#, ["wake"]),
            (#"{"quietHours":"15:00-16:00","quietMessages":"none"}"#, []),
            (#"{"quietHours":"15:00-16:00","wakes":false}"#, []),
        ])
        func aMessageInQuietHoursGoesAsAWake(policy: String, kinds: [String]) async throws {
            let harness = try Harness()
            try await harness.service.store.setPolicy(account: "alice@localhost", json: policy)
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/pc"))
            #expect(harness.upstream.map { $0.kind ?? "message" } == kinds)
            let counts = harness.service.statistics.sinceStart
            #expect(counts["quiet-hours.wake"] == (kinds.isEmpty ? nil : 2))
            #expect(counts["dropped.rate-limit"] == (kinds.isEmpty ? nil : 1))
            #expect(counts["dropped.policy"] == (kinds.isEmpty ? 2 : nil))
        }

        @Test func wakesAreRateLimited() async throws {
            let harness = try Harness()
            try await harness.publishBridged(Stanzas.presence())
            harness.clock.advance(seconds: 59)
            #expect(try await harness.publishBridged(Stanzas.presence()) == nil)
            #expect(harness.upstream.count == 1)
            harness.clock.advance(seconds: 1)
            try await harness.publishBridged(Stanzas.presence())
            #expect(harness.upstream.map(\.kind) == ["wake", "wake"])
            #expect(
                try await harness.upstream[0].summary(with: harness.device)
                    == #"{"v":2,"kind":"wake","account":"alice@localhost","ts":1764430000}"#)
        }

        @Test func twoConcurrentWakesForOneRegistrationSendOne() async throws {
            let harness = try Harness()
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            // Both publishes read the registration before either recorded its wake.
            let snapshot = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
            let wake = ClassifiedPublish(account: "alice@localhost", event: .wake)
            let (service, at) = (harness.service, harness.clock.now)
            let first = try await harness.store.transaction { try service.apply(wake, to: snapshot, at: at, in: $0) }
            let second = try await harness.store.transaction { try service.apply(wake, to: snapshot, at: at, in: $0) }
            #expect(first.map(\.kind) == [.wake])
            #expect(second.isEmpty)
        }
    }
}

extension PushServiceTests {
    /// Grace as the service applies it: the account's desktop marks or writes (its carbons reach the
    /// phone's registration as reads), and bob's messages meet the account's policy.
    @Suite struct GraceHolds {
        /// A service whose default policy has a 5 s grace.
        static func harness(
            when: PushPolicy.GraceWhen = .active, mentions: Bool = true, store: SQLitePushStore? = nil,
            clock: ManualClock = ManualClock(), device: KeyPair? = nil
        ) throws -> Harness {
            var settings = APushSettings()
            settings.defaults.graceSeconds = 5
            settings.defaults.graceWhen = when
            settings.defaults.graceMentions = mentions
            return try Harness(settings: settings, store: store, clock: clock, device: device)
        }

        /// The desktop marks bob's chat displayed: alice is active there.
        static func desktopActive(_ harness: Harness) async throws {
            try await harness.publishBridged(Stanzas.displayedCarbon())
        }

        @Test func whileTheDesktopIsActiveNothingGoesThenOnePushWithTheLatestCount() async throws {
            let harness = try Self.harness()
            try await Self.desktopActive(harness)
            for index in 1...3 {
                harness.clock.advance(seconds: 1)
                try await harness.publishBridged(Stanzas.chat(id: "m\(index)"))
            }
            #expect(harness.upstream.isEmpty)
            // The grace ends 5 s after the desktop's last activity.
            harness.clock.advance(seconds: 1.999)
            try await harness.processDueWork()
            #expect(harness.upstream.isEmpty)
            harness.clock.advance(seconds: 0.001)
            try await harness.processDueWork()
            let summaries = try await harness.summaries()
            #expect(summaries.map { $0["count"] as? Int } == [3])
            #expect(summaries.first?["id"] as? String == "s-m3")
        }

        @Test func withGraceOffTheSameActivityHoldsNothing() async throws {
            let harness = try Harness()
            try await Self.desktopActive(harness)
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            #expect(harness.upstream.count == 1)
        }

        @Test func newActivityMovesTheStoredWindowsEndAndTheLoopSleepsUntilIt() async throws {
            let harness = try Self.harness()
            try await Self.desktopActive(harness)
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            let start = harness.clock.now
            #expect(try await harness.store.nextWindowEnd() == start + 5000)
            // The desktop writes to carol at 4 s: alice is still active when bob's window ends.
            harness.clock.advance(seconds: 4)
            try await harness.publishBridged(Stanzas.displayedCarbon(chat: "carol@localhost"))
            harness.clock.advance(seconds: 1)
            try await harness.processDueWork()
            #expect(harness.upstream.isEmpty)
            // Moved on to a time to come: the loop sleeps until it instead of taking it again.
            #expect(try await harness.store.nextWindowEnd() == start + 9000)
            #expect(try await harness.store.dueWindows(at: harness.clock.now, limit: 10).isEmpty)
            harness.clock.advance(seconds: 4)
            try await harness.processDueWork()
            #expect(try await harness.summaries().map { $0["count"] as? Int } == [1])
        }

        @Test func aReadDuringGraceSendsNothingAtAll() async throws {
            let harness = try Self.harness()
            try await Self.desktopActive(harness)
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            try await harness.publishBridged(Stanzas.chat(id: "m2"))
            harness.clock.advance(seconds: 2)
            try await Self.desktopActive(harness)
            harness.clock.advance(seconds: 60)
            try await harness.processDueWork()
            #expect(harness.upstream.isEmpty, "no message push, no read push")
        }

        @Test func aCallDuringGraceRingsAtOnce() async throws {
            let harness = try Self.harness()
            try await Self.desktopActive(harness)
            try await harness.publishBridged(Stanzas.propose(sid: "s1"))
            #expect(harness.upstream.map(\.kind) == ["voip"])
        }

        @Test func aMentionWithGraceMentionsOffGoesAtOnceAndAnotherGroupChatMessageWaits() async throws {
            let harness = try Self.harness(mentions: false)
            try await Self.desktopActive(harness)
            func groupchat(_ id: String, body: String) -> String {
                "<message xmlns='jabber:client' type='groupchat' id='\(id)' from='crew@muc.localhost/Zoë' "
                    + "to='alice@localhost'><body>\(body)</body></message>"
            }
            try await harness.publishBridged(groupchat("g1", body: "lunch?"))
            #expect(harness.upstream.isEmpty)
            try await harness.publishBridged(groupchat("g2", body: "alice, lunch?"))
            let summaries = try await harness.summaries()
            #expect(summaries.map { $0["mention"] as? Bool } == [true])
            #expect(summaries.map { $0["count"] as? Int } == [2])
        }

        @Test func connectedHoldsWhileAnotherSessionIsAvailable() async throws {
            let harness = try Self.harness(when: .connected)
            harness.service.accountSessions.withLock {
                $0.presence(of: "alice@localhost", resource: "desktop", available: true)
            }
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            harness.clock.advance(seconds: 5)
            try await harness.processDueWork()
            #expect(harness.upstream.isEmpty, "still available: judged again a grace later")
            harness.service.accountSessions.withLock {
                $0.presence(of: "alice@localhost", resource: "desktop", available: false)
            }
            harness.clock.advance(seconds: 5)
            try await harness.processDueWork()
            #expect(try await harness.summaries().map { $0["count"] as? Int } == [1])
        }

        @Test func afterARestartDuringGraceThePushGoesAtTheWindowsEnd() async throws {
            let path = PushServiceBackgroundTests.temporaryStorePath()
            defer { PushServiceBackgroundTests.removeStore(path) }
            let clock = ManualClock()
            let device = KeyPair.generate()
            do {
                let first = try Self.harness(
                    store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
                try await Self.desktopActive(first)
                try await first.publishBridged(Stanzas.chat(id: "m1"))
                try await first.publishBridged(Stanzas.chat(id: "m2"))
                #expect(first.upstream.isEmpty)
            }
            // The new process knows nothing of alice's desktop: it fails open, and the stored window ends.
            let second = try Self.harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
            clock.advance(seconds: 5)
            try await second.processDueWork()
            #expect(try await second.summaries().map { $0["count"] as? Int } == [2])
        }
    }
}
