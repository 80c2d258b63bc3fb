import Foundation
import Sealing
import Store
import Testing
import XMLStream
import XMPP
@testable import APush

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
        try await harness.service.processDueWork(context: harness.context)
        #expect(harness.upstream.count == 1)
        harness.clock.advance(seconds: 0.001)
        try await harness.service.processDueWork(context: harness.context)
        let summaries = try harness.summaries()
        #expect(summaries.map { $0["count"] as? Int } == [1, 5])
        #expect(summaries.last?["id"] as? String == "s-b5")
        #expect(harness.upstream[0].collapse == harness.upstream[1].collapse)

        harness.clock.advance(seconds: 10)
        try await harness.service.processDueWork(context: harness.context)
        #expect(harness.upstream.count == 2)
        #expect(try await harness.store.nextWindowEnd() == nil)
    }

    @Test(arguments: [RecordingSender.Answer.error(type: "wait", condition: "resource-constraint"), .timeout,
                      .disconnected, .error(type: "cancel", condition: "remote-server-not-found")])
    func anUnreachableAppServerIsRetriedWithAFreshEnvelope(_ answer: RecordingSender.Answer) async throws {
        let harness = try Harness()
        harness.sender.script(answer)
        let error = try await harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(error == StanzaError(.remoteServerTimeout, type: .wait))
        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(registration.lastError != nil)
        #expect(try await harness.store.nextRetry() == ManualClock.start + 2000)

        harness.clock.advance(seconds: 1.999)
        try await harness.service.processDueWork(context: harness.context)
        #expect(harness.upstream.count == 1)
        harness.clock.advance(seconds: 0.001)
        try await harness.service.processDueWork(context: harness.context)
        let pushes = harness.upstream
        try #require(pushes.count == 2)
        #expect(pushes[0].envelope != pushes[1].envelope)
        #expect(try pushes[0].summary(with: harness.device) == (try pushes[1].summary(with: harness.device)))
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
            try await harness.service.processDueWork(context: harness.context)
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
            try await harness.service.processDueWork(context: harness.context)
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
        try await harness.service.processDueWork(context: harness.context)
        #expect(harness.upstream.count == 1)
        #expect(try await harness.store.nextRetry() == nil)
        #expect(harness.service.statistics.sinceStart["pushes.call.expired"] == 1)
    }

    @Test func aHeldNoticeOfAChatMutedDuringItsWindowIsNotPushed() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        try await harness.service.setPolicy(account: "alice@localhost", json: #"{"muted":["bob@localhost"]}"#)
        harness.clock.advance(seconds: 10)
        try await harness.service.processDueWork(context: harness.context)
        #expect(harness.upstream.count == 1)
        let chat = try #require(try await harness.store.chats(registrationID: 1).first)
        #expect(chat.count == 2, "a silenced message still counts")
    }

    @Test func aHeldNoticeAtTheWindowsEndInQuietHoursGoesAsAWake() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        try await harness.publishBridged(Stanzas.chat(id: "m2"))
        // 15:26:40 UTC now; quiet hours begin within the window.
        try await harness.service.setPolicy(account: "alice@localhost", json: #"{"quietHours":"15:26-16:00"}"#)
        harness.clock.advance(seconds: 10)
        try await harness.service.processDueWork(context: harness.context)
        #expect(harness.upstream.map(\.kind) == [nil, "wake"])
    }

    @Test func aHeldWindowSurvivesARestart() async throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("apush-restart-\(UInt64.random(in: 0...UInt64.max)).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
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
        try await second.service.processDueWork(context: second.context)
        let summaries = try second.summaries()
        #expect(summaries.map { $0["count"] as? Int } == [5])
        #expect(summaries.first?["account"] as? String == "alice@localhost")
        #expect(second.upstream.first?.node == "tok123")
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
