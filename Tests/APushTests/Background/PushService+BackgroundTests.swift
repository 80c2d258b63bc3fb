import Foundation
import Logging
import SQLCore
import SQLite
import Sealing
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush
@testable import Store

/// Stored work: ended windows, retries, a restart, maintenance.
@Suite struct PushServiceBackgroundTests {
    @Test func aBurstOfFiveIsOnePushAndOneWithTheCountAtTheWindowsEnd() async throws {
        let harness = try Harness()
        for index in 1...5 {
            try await harness.publishBridged(Stanzas.chat(id: "b\(index)"))
            harness.clock.advance(seconds: 1)
        }
        #expect(harness.upstream.count == 1)
        harness.clock.advance(seconds: 4.999)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 1)
        harness.clock.advance(seconds: 0.001)
        try await harness.processDueWork()
        let summaries = try await harness.summaries()
        #expect(summaries.map { $0["count"] as? Int } == [1, 5])
        #expect(summaries.last?["id"] as? String == "s-b5")
        #expect(harness.upstream[0].collapse == harness.upstream[1].collapse)

        harness.clock.advance(seconds: 10)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 2)
        #expect(try await harness.store.nextWindowEnd() == nil)
    }

    @Test(arguments: [
        RecordingSender.Answer.error(type: "wait", condition: "resource-constraint"), .timeout,
        .disconnected, .error(type: "cancel", condition: "remote-server-not-found"),
    ])
    func anUnreachableAppServerIsRetriedWithAFreshEnvelope(_ answer: RecordingSender.Answer) async throws {
        let harness = try Harness()
        harness.sender.script(answer)
        let error = try await harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(error == StanzaError(.remoteServerTimeout, type: .wait))
        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(registration.lastError != nil)
        #expect(try await harness.store.nextRetry() == ManualClock.start + 2000)

        harness.clock.advance(seconds: 1.999)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 1)
        harness.clock.advance(seconds: 0.001)
        try await harness.processDueWork()
        let pushes = harness.upstream
        try #require(pushes.count == 2)
        #expect(pushes[0].envelope != pushes[1].envelope)
        #expect(
            try await pushes[0].summary(with: harness.device) == (try await pushes[1].summary(with: harness.device)))
        #expect(pushes[0].collapse == pushes[1].collapse)
        #expect(try await harness.store.nextRetry() == nil)
    }

    @Test func aRetryGivesUpAtItsDeadline() async throws {
        var settings = APushSettings()
        settings.retryMessageSeconds = 5
        let harness = try Harness(settings: settings)
        harness.sender.answerAll(.error(type: "wait", condition: "resource-constraint"))
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        for _ in 0..<10 {
            harness.clock.advance(seconds: 2)
            try await harness.processDueWork()
        }
        // At 0 s, then at 2 s; the next try (at 6 s) would pass the 5 s deadline.
        #expect(harness.upstream.count == 2)
        #expect(try await harness.store.nextRetry() == nil)
        #expect(harness.service.statistics.sinceStart["pushes.message.expired"] == 1)
    }

    @Test func aCallIsRetriedOnlyWhileItCanRing() async throws {
        let harness = try Harness()
        harness.sender.answerAll(.timeout)
        try await harness.publishBridged(Stanzas.propose(sid: "s1"))
        for _ in 0..<60 {
            harness.clock.advance(seconds: 1)
            try await harness.processDueWork()
        }
        // At 0, 2, 6, 14 and 30 s; the next (60 s) would pass the 30 s deadline.
        #expect(harness.upstream.count == 5)
        #expect(harness.upstream.allSatisfy { $0.kind == "voip" })
    }

    @Test func aStoredRetryWhoseDeadlineHasPassedIsDroppedUnsent() async throws {
        let harness = try Harness()
        harness.sender.script(.timeout)
        try await harness.publishBridged(Stanzas.propose(sid: "s1"))
        #expect(try await harness.store.nextRetry() != nil)
        // The component was down for an hour: the call cannot ring any more.
        harness.clock.advance(seconds: 3600)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 1)
        #expect(try await harness.store.nextRetry() == nil)
        #expect(harness.service.statistics.sinceStart["pushes.call.expired"] == 1)
    }

    @Test func aHeldNoticeOfAChatMutedDuringItsWindowIsNotPushed() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        try await harness.service.store.setPolicy(account: "alice@localhost", json: #"{"muted":["bob@localhost"]}"#)
        harness.clock.advance(seconds: 10)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 1)
        let chat = try #require(try await harness.store.chats(registrationID: 1).first)
        #expect(chat.count == 2, "a silenced message still counts")
    }

    @Test func aHeldNoticeAtTheWindowsEndInQuietHoursGoesAsAWake() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        // 15:26:40 UTC now; quiet hours begin within the window.
        try await harness.service.store.setPolicy(account: "alice@localhost", json: #"{"quietHours":"15:26-16:00"}"#)
        harness.clock.advance(seconds: 10)
        try await harness.processDueWork()
        #expect(harness.upstream.map(\.kind) == [nil, "wake"])
    }

    static func temporaryStorePath() -> String {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("apush-restart-\(UInt64.random(in: 0...UInt64.max)).sqlite").path
    }

    static func removeStore(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// A registration whose row is damaged in the file fails its own window, named by its column, and
    /// holds up no other registration's push; its window is kept, so nothing is lost.
    @Test func aDamagedRegistrationHoldsUpNoOtherRegistrationsPush() async throws {
        let path = Self.temporaryStorePath()
        defer { Self.removeStore(path) }
        let harness = try Harness(store: try SQLitePushStore(.file(path: path)))
        for (account, node) in [("alice@localhost", "tok-a"), ("bob@localhost", "tok-b")] {
            for index in 1...2 {
                try await harness.publishBridged(
                    Stanzas.chat(
                        id: "\(node)-\(index)", from: "carol@localhost/phone",
                        to: account), node: node, account: account)
            }
            harness.clock.advance(seconds: 1)
        }
        #expect(harness.upstream.map(\.node) == ["tok-a", "tok-b"])
        let aliceWindowEnd = try await harness.store.nextWindowEnd()
        try Database(.file(path: path)).executeScript(
            "UPDATE registrations SET calls = 'sometimes' WHERE token = 'tok-a'")

        harness.clock.advance(seconds: 60)
        let error = await #expect(throws: RowDecodingError.self) { try await harness.processDueWork() }
        #expect(error?.description.hasPrefix("column calls holds a TEXT that is no value this build knows") == true)
        try await harness.waitForBackgroundDeliveries()
        #expect(harness.upstream.map(\.node) == ["tok-a", "tok-b", "tok-b"])
        #expect(try await harness.store.nextWindowEnd() == aliceWindowEnd)
    }

    /// A stored push whose kind is damaged in the file is neither sent nor silently deleted: it is logged
    /// with its column and kept until its deadline, so it can be repaired.
    @Test func aStoredPushOfAnUnknownKindIsLoggedAndKeptNotDeleted() async throws {
        let path = Self.temporaryStorePath()
        defer { Self.removeStore(path) }
        let harness = try Harness(store: try SQLitePushStore(.file(path: path)))
        harness.sender.answerAll(.error(type: "wait", condition: "resource-constraint"))
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        let retryAt = try #require(try await harness.store.nextRetry())
        try Database(.file(path: path)).executeScript("UPDATE retries SET kind = 'sometimes'")

        harness.clock.advance(seconds: 2)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 1)
        let leasedUntil = try #require(try await harness.store.nextRetry(), "kept, not deleted")
        #expect(leasedUntil > retryAt)
        #expect(harness.logs.text.contains("column kind of retries"))
    }

    @Test func aHeldWindowSurvivesARestart() async throws {
        let path = Self.temporaryStorePath()
        defer { Self.removeStore(path) }
        let clock = ManualClock()
        let device = KeyPair.generate()
        do {
            let first = try Harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
            for index in 1...5 {
                try await first.publishBridged(Stanzas.chat(id: "b\(index)"))
            }
            #expect(first.upstream.count == 1)
        }
        // The first process is gone (kill -9 after the fifth publish): a new one opens the same file.
        clock.advance(seconds: 30)
        let second = try Harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
        try await second.processDueWork()
        let summaries = try await second.summaries()
        #expect(summaries.map { $0["count"] as? Int } == [5])
        #expect(summaries.first?["account"] as? String == "alice@localhost")
        #expect(second.upstream.first?.node == "tok123")
    }

    /// Runs one background turn and says whether it returned within `limit`: a turn must never wait for
    /// the App Server's answers (they may take 25 s each, or never come).
    /// Whether a turn returns while the App Server holds every answer (it never answers, so a turn that
    /// waited for one would not return at all): a bound on liveness, wide for a loaded machine.
    /// Whether a turn returns, its clock moved once by the bound on waiting for a slot if it waits for
    /// one (a turn that waited on the App Server, or longer than the bound, would not return).
    static func turnReturns(_ harness: Harness, within limit: Duration = .seconds(60)) async throws -> Bool {
        let returned = Mutex(false)
        Task {
            try await harness.service.processDueWork(upstream: harness.upstreamLink)
            returned.withLock { $0 = true }
        }
        let deadline = ContinuousClock.now + limit
        var movedTheClock = false
        while !returned.withLock({ $0 }), ContinuousClock.now < deadline {
            if !movedTheClock, harness.clock.sleepers > 0 {
                harness.clock.advance(milliseconds: DueWork.slotWaitLimit)
                movedTheClock = true
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        return returned.withLock { $0 }
    }

    /// Stores `count` message retries (one chat each) and a call retry, all due at `ManualClock.start + 2 s`.
    static func storeRetries(_ harness: Harness, messages count: Int, call: Bool) async throws {
        harness.sender.answerAll(.timeout)
        for index in 0..<count {
            try await harness.publishBridged(Stanzas.chat(id: "m\(index)", from: "user\(index)@localhost/pc"))
        }
        if call { try await harness.publishBridged(Stanzas.propose(sid: "s1")) }
        harness.sender.answerAll(.result)
    }

    /// A silent App Server used to stall every window and retry behind it, 25 s each, one at a time.
    @Test func aSilentAppServerDelaysNoTurnAndAtMostTheBoundWaitsOnIt() async throws {
        var settings = APushSettings()
        settings.maxBackgroundDeliveries = 3
        let harness = try Harness(settings: settings)
        try await Self.storeRetries(harness, messages: 5, call: false)
        let sentBefore = harness.upstream.count
        harness.sender.answerAll(.held)
        harness.clock.advance(seconds: 2)

        #expect(try await Self.turnReturns(harness), "the turn waited for the App Server")
        try await harness.sender.waitForRequests(sentBefore + 3)
        #expect(harness.upstream.count == sentBefore + 3, "the bound")
        #expect(harness.service.dueWork.deliveriesInFlight == 3)

        // The next turn sends none of those again while they are in flight, and nothing past the bound.
        harness.clock.advance(seconds: 5)
        #expect(try await Self.turnReturns(harness))
        #expect(harness.upstream.count == sentBefore + 3)
        try await harness.service.maintain()

        // Answers come: the rest goes out, each push once.
        harness.sender.release()
        try await harness.waitForBackgroundDeliveries()
        try await harness.processDueWork()
        let retried = harness.upstream.dropFirst(sentBefore)
        #expect(retried.count == 5)
        #expect(Set(try await retried.summaries(with: harness.device).map { $0["chat"] as? String }).count == 5)
        #expect(try await harness.store.nextRetry() == nil)
    }

    @Test func aCallRetryGoesBeforeAnythingElse() async throws {
        var settings = APushSettings()
        settings.maxBackgroundDeliveries = 1
        let harness = try Harness(settings: settings)
        try await Self.storeRetries(harness, messages: 3, call: true)
        // A held notice whose window ends when the retries are due.
        harness.clock.advance(seconds: 1)
        try await harness.publishBridged(Stanzas.chat(id: "m0b", from: "user0@localhost/pc"))
        let sentBefore = harness.upstream.count
        harness.clock.advance(seconds: 10)
        try await harness.processDueWork()
        #expect(harness.upstream.dropFirst(sentBefore).map(\.kind) == ["voip"])
        for _ in 0..<5 { try await harness.processDueWork() }
        // user0's retry (count 1) gave way to its window's push (count 2), which says more.
        #expect(harness.upstream.dropFirst(sentBefore).map(\.kind) == ["voip", nil, nil, nil])
        #expect(harness.service.statistics.sinceStart["pushes.message.superseded"] == 1)
    }

    /// Deliveries in flight fill every slot: expired retries are still dropped and counted.
    @Test func expiredRetriesAreDroppedWhileEverySlotWaitsOnTheAppServer() async throws {
        var settings = APushSettings()
        settings.maxBackgroundDeliveries = 1
        settings.retryMessageSeconds = 10
        let harness = try Harness(settings: settings)
        try await Self.storeRetries(harness, messages: 2, call: true)
        harness.sender.answerAll(.held)
        harness.clock.advance(seconds: 2)
        #expect(try await Self.turnReturns(harness))
        try await harness.sender.waitForRequests(4)
        #expect(harness.upstream.last?.kind == "voip")
        harness.clock.advance(seconds: 20)
        #expect(try await Self.turnReturns(harness))
        #expect(harness.service.statistics.sinceStart["pushes.message.expired"] == 2)
        harness.sender.release()
        try await harness.waitForBackgroundDeliveries()
        let counts = harness.service.statistics.sinceStart
        #expect(counts["pushes.call.accepted"] == 1)
        #expect(counts["pushes.call.expired"] == nil, "in flight, not expired")
        #expect(try await harness.store.nextRetry() == nil)
    }

    /// docs/wire-contract.md, at least once: a held push is not lost if the process dies while the App Server has not answered it. It
    /// waits in the store (leased) and goes out when the lease ends, with its count.
    @Test func aHeldPushInFlightWhenTheProcessDiesGoesOutAfterARestart() async throws {
        let path = Self.temporaryStorePath()
        defer { Self.removeStore(path) }
        let clock = ManualClock()
        let device = KeyPair.generate()
        let first = try Harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
        for index in 1...5 {
            try await first.publishBridged(Stanzas.chat(id: "b\(index)"))
        }
        clock.advance(seconds: 10)
        first.sender.answerAll(.held)
        let dying = Task { try await first.service.processDueWork(upstream: first.upstreamLink) }
        try await first.sender.waitForRequests(2)
        #expect(first.upstream.count == 2, "the held push is on its way")

        // kill -9 now: the App Server never answers that process. A new one opens the same file.
        clock.advance(seconds: 5)
        let second = try Harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
        try await second.processDueWork()
        #expect(second.upstream.isEmpty, "not sent twice while the first may still be waiting for its answer")
        clock.advance(seconds: 30)
        try await second.processDueWork()
        let summaries = try await second.summaries()
        #expect(summaries.map { $0["count"] as? Int } == [5])
        #expect(summaries.first?["id"] as? String == "s-b5")
        #expect(try await second.store.nextRetry() == nil)

        first.sender.release()
        try await dying.value
    }

    /// Issue 25: the App Server answered, but the store could not record it (a full disk): the answer is
    /// kept and recorded once the store is back, and the push is not sent again when its lease ends.
    @Test func anAnswerTheStoreCouldNotRecordIsRecordedLaterNotSentAgain() async throws {
        let harness = try Harness()
        let failRemovals = "CREATE TRIGGER full BEFORE DELETE ON retries BEGIN SELECT RAISE(ABORT, 'full'); END;"
        try await harness.store.run { try $0.executeScript(failRemovals) }
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(harness.upstream.count == 1)
        for _ in 0..<5000 where harness.service.statistics.sinceStart["upstream.answers.unrecorded"] == nil {
            try await Task.sleep(for: .milliseconds(1))
        }
        harness.clock.advance(seconds: 31)
        // The turn does its work, then fails for the answer it could not record (the loop pauses and
        // tries again).
        await #expect(throws: (any Error).self) { try await harness.processDueWork() }
        #expect(harness.upstream.count == 1, "sent again when its lease ended, though the App Server took it")

        try await harness.store.run { try $0.executeScript("DROP TRIGGER full;") }
        try await harness.processDueWork()
        #expect(try await harness.store.nextRetry() == nil, "recorded once the store is back")
        harness.clock.advance(seconds: 60)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 1)
        let counts = harness.service.statistics.sinceStart
        #expect(counts["upstream.answers.unrecorded"] == 1)
        #expect(counts["upstream.answers.recorded-late"] == 1)
    }

    /// A first process sends message `m1` at once and dies before the App Server answers it (it never
    /// does: `kill -9`); a second process opens the same store file on the same clock.
    static func processDiesSendingAMessageAtOnce(store path: String) async throws
        -> (first: Harness, second: Harness, clock: ManualClock, dying: Task<StanzaError?, any Error>)
    {
        let clock = ManualClock()
        let device = KeyPair.generate()
        let first = try Harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
        first.sender.answerAll(.held)
        let dying = Task { try await first.publishBridged(Stanzas.chat(id: "m1")) }
        try await first.sender.waitForRequests(1)
        let second = try Harness(store: try SQLitePushStore(.file(path: path)), clock: clock, device: device)
        return (first, second, clock, dying)
    }

    /// The same for a push sent at once: stored with the decision that makes it, before it is sent.
    @Test func aPushSentAtOnceWhenTheProcessDiesGoesOutAfterARestart() async throws {
        let path = Self.temporaryStorePath()
        defer { Self.removeStore(path) }
        let (first, second, clock, dying) = try await Self.processDiesSendingAMessageAtOnce(store: path)
        try await second.processDueWork()
        #expect(second.upstream.isEmpty)
        clock.advance(seconds: 30)
        try await second.processDueWork()
        #expect(try await second.summaries().map { $0["id"] as? String } == ["s-m1"])
        #expect(try await second.store.nextRetry() == nil)

        first.sender.release()
        _ = try await dying.value
    }

    /// A stored message push goes out again only while it still says what its chat is. Here the first
    /// push of a chat is in flight when the process dies; before its lease ends, two more messages come
    /// (one pushed, one held) or the chat is read. Sent again, the old count (or a withdrawn notice)
    /// would land on the device after the newer one, and its collapse tag would put it in their place.
    @Test(arguments: ["later messages", "a read"])
    func aStoredMessagePushThatALaterMessageOrAReadSupersededIsNotSentAgain(_ what: String) async throws {
        let path = Self.temporaryStorePath()
        defer { Self.removeStore(path) }
        let (first, second, clock, dying) = try await Self.processDiesSendingAMessageAtOnce(store: path)
        clock.advance(seconds: 11)
        if what == "a read" {
            try await second.publishBridged(Stanzas.displayedCarbon())
        } else {
            try await second.publishBridged(Stanzas.chat(id: "m2"))
            try await second.publishBridged(Stanzas.chat(id: "m3"))
        }
        clock.advance(seconds: 30)
        try await second.processDueWork()
        let counts = try await second.summaries().compactMap { $0["count"] as? Int }
        #expect(counts == (what == "a read" ? [] : [2, 3]), "the stale push (count 1) went out again")
        #expect(try await second.store.nextRetry() == nil)
        #expect(second.service.statistics.sinceStart["pushes.message.superseded"] == 1)

        first.sender.release()
        _ = try await dying.value
    }

    /// Issue 20, item 4: M1 is pushed (count 1) and the App Server answers `wait`; the chat is read
    /// (count 0) and M2 comes (count 1 again) and is pushed. M1's retry says the same count as the chat,
    /// but it was decided before the read and M2: sent, it would land last under the same collapse tag.
    @Test func aRetryOfAMessageIsDroppedWhenTheChatWasReadAndWrittenToSinceEvenWithTheSameCount() async throws {
        let harness = try Harness()
        harness.sender.script(.error(type: "wait", condition: "resource-constraint"))
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        harness.clock.advance(seconds: 11)
        try await harness.publishBridged(Stanzas.displayedCarbon())
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        harness.clock.advance(seconds: 60)
        try await harness.processDueWork()
        let summaries = try await harness.summaries()
        #expect(summaries.map { $0["id"] as? String } == ["s-m1", nil, "s-m2"], "M1's retry went after M2")
        #expect(summaries.map { $0["count"] as? Int } == [1, nil, 1])
        #expect(harness.service.statistics.sinceStart["pushes.message.superseded"] == 1)
        #expect(try await harness.store.nextRetry() == nil)
    }

    /// Issue 20, item 7: the maintenance chore removes a registration nobody registered, renewed or
    /// pushed for `registrationExpiryDays`; one pushed since stays.
    @Test func maintenanceExpiresARegistrationUnusedForTheConfiguredDays() async throws {
        var settings = APushSettings()
        settings.registrationExpiryDays = 30
        let harness = try Harness(settings: settings)
        try await harness.publishBridged(Stanzas.chat(id: "m1"), node: "idle")
        try await harness.publishBridged(Stanzas.chat(id: "m1"), node: "busy")
        harness.clock.advance(seconds: 20 * 86_400)
        try await harness.publishBridged(Stanzas.chat(id: "m2"), node: "busy")
        harness.clock.advance(seconds: 10 * 86_400 - 1)
        try await harness.service.maintain()
        #expect(try await harness.store.countRegistrations(matching: RegistrationFilter()) == 2, "not yet")
        harness.clock.advance(seconds: 2)
        try await harness.service.maintain()
        #expect(
            try await harness.store.registration(domain: "localhost", token: "idle", account: "alice@localhost") == nil)
        #expect(
            try await harness.store.registration(domain: "localhost", token: "busy", account: "alice@localhost") != nil)
        #expect(harness.service.statistics.sinceStart["registrations.expired"] == 1)
    }

    @Test func maintenanceStoresTheCountersAndForgetsOldTombstones() async throws {
        let harness = try Harness()
        harness.sender.script(.error(type: "cancel", condition: "item-not-found"))
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.service.maintain()
        let counters = try await harness.store.counters()
        #expect(counters["pushes.message.dead-token"] == 1)
        #expect(counters["answers.cancel"] == 1)
        #expect(harness.service.statistics.unflushed.isEmpty)
        harness.clock.advance(seconds: 86_401)
        try await harness.service.maintain()
        #expect(!(try await harness.store.isBuried(token: "tok123", pushModule: "apush", account: nil, since: 0)))
    }
}
