@testable import APush
import Testing

@Suite(.timeLimit(.minutes(1)))
struct DoorbellTests {
    @Test func aRingWakesAWaiterLongBeforeItsTimeout() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        async let waited: Void = bell.wait(upTo: .seconds(120))
        try? await Task.sleep(for: .milliseconds(50))
        bell.ring()
        await waited
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func aRingWithNobodyWaitingIsKeptForTheNextWait() async {
        let bell = Doorbell()
        bell.ring()
        let started = ContinuousClock.now
        await bell.wait(upTo: .seconds(120))
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test func withoutARingTheWaitEndsAtItsTimeout() async {
        let bell = Doorbell()
        let started = ContinuousClock.now
        await bell.wait(upTo: .milliseconds(100))
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(100))
        #expect(waited < .seconds(30))
    }

    @Test func cancellingTheWaitingTaskEndsTheWait() async {
        let bell = Doorbell()
        let waiter = Task { await bell.wait(upTo: .seconds(120)) }
        try? await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        waiter.cancel()
        await waiter.value
        #expect(ContinuousClock.now - started < .seconds(30))
    }
}

extension DoorbellTests {
    /// A wait ended early by a ring must not leave its timer behind to ring later: the next wait would
    /// then end at once, and the background loop would spin.
    @Test func aWaitEndedByARingLeavesNoRingBehindForTheNextWait() async {
        let bell = Doorbell()
        async let first: Void = bell.wait(upTo: .milliseconds(50))
        bell.ring()
        await first
        // The first wait's timer would have rung by now.
        try? await Task.sleep(for: .milliseconds(200))
        let started = ContinuousClock.now
        await bell.wait(upTo: .milliseconds(500))
        #expect(ContinuousClock.now - started >= .milliseconds(500))
    }
}
