import Synchronization
import Testing
import TestSupport

@testable import APush

/// The doorbell's deadlines run on the module's clock: a manual one here, so no test waits on real time
/// for a deadline (one checks the system clock's own timer).
@Suite(.timeLimit(.minutes(1)))
struct DoorbellTests {
    /// A wait on `bell` in a task of its own, with whether it has returned.
    private final class Waiter: Sendable {
        private final class Flag: Sendable {
            let raised = Mutex(false)
        }

        let task: Task<Void, Never>
        private let done = Flag()

        init(_ bell: Doorbell, until deadline: Int64) {
            task = Task { [done] in
                await bell.wait(until: deadline)
                done.raised.withLock { $0 = true }
            }
        }

        var hasReturned: Bool { done.raised.withLock { $0 } }

        /// Gives the waiter a moment of real time to return if it wrongly would.
        func expectStillWaiting(sourceLocation: SourceLocation = #_sourceLocation) async {
            try? await Task.sleep(for: .milliseconds(50))
            #expect(!hasReturned, sourceLocation: sourceLocation)
        }
    }

    @Test func aRingWakesAWaiterBeforeItsDeadline() async throws {
        let clock = ManualClock()
        let bell = Doorbell(clock: clock.pushClock)
        let waiter = Waiter(bell, until: clock.now + 120_000)
        try await clock.waitForSleepers()
        bell.ring()
        await waiter.task.value
        #expect(clock.now == ManualClock.start, "no time had to pass")
    }

    @Test func aRingWithNobodyWaitingIsKeptForTheNextWait() async {
        let clock = ManualClock()
        let bell = Doorbell(clock: clock.pushClock)
        bell.ring()
        await bell.wait(until: clock.now + 120_000)
        #expect(clock.now == ManualClock.start)
    }

    @Test func withoutARingTheWaitEndsAtItsDeadlineOnTheClock() async throws {
        let clock = ManualClock()
        let bell = Doorbell(clock: clock.pushClock)
        let waiter = Waiter(bell, until: clock.now + 100)
        try await clock.waitForSleepers()
        clock.advance(milliseconds: 99)
        await waiter.expectStillWaiting()
        clock.advance(milliseconds: 1)
        await waiter.task.value
    }

    @Test func cancellingTheWaitingTaskEndsTheWait() async throws {
        let clock = ManualClock()
        let bell = Doorbell(clock: clock.pushClock)
        let waiter = Waiter(bell, until: clock.now + 120_000)
        try await clock.waitForSleepers()
        waiter.task.cancel()
        await waiter.task.value
        #expect(clock.sleepers == 0, "the wait's timer went with it")
    }

    @Test func theSystemClocksTimerEndsAWait() async {
        let bell = Doorbell(clock: .system)
        let started = ContinuousClock.now
        await bell.wait(until: PushClock.system.now() + 100)
        #expect(ContinuousClock.now - started >= .milliseconds(90))
    }
}

extension DoorbellTests {
    /// A wait ended early by a ring must not leave its timer behind to end the next wait: the
    /// background loop would then spin.
    @Test func aWaitEndedByARingLeavesNothingBehindForTheNextWait() async throws {
        let clock = ManualClock()
        let bell = Doorbell(clock: clock.pushClock)
        let first = Waiter(bell, until: clock.now + 50)
        try await clock.waitForSleepers()
        bell.ring()
        await first.task.value
        // The first wait's deadline passes while the second waits.
        let second = Waiter(bell, until: clock.now + 500)
        try await clock.waitForSleepers()
        clock.advance(milliseconds: 200)
        await second.expectStillWaiting()
        clock.advance(milliseconds: 300)
        await second.task.value
    }
}
