import Store
import Synchronization
import Testing
import TestSupport

@testable import APush

@Suite struct DueWorkTests {
    @Test func theLoopSleepsUntilTheNextDueTimeButNeverLongerThanAFlushInterval() {
        #expect(DueWork.wakeTime(for: 5_000, now: 1_000) == 5_000)
        #expect(DueWork.wakeTime(for: 1_000, now: 5_000) == 5_000)
        #expect(DueWork.wakeTime(for: 10_000_000, now: 0) == MaintenanceSchedule.flushInterval)
    }

    /// Another instance sharing the store stored work: a loop asleep until later wakes for it, one
    /// asleep until sooner does not; an announcement while the loop is awake is kept for its next sleep.
    @Test func workAnnouncedByAnotherInstanceWakesTheLoopOnlyWhenDueSooner() async throws {
        let clock = ManualClock()
        let dueWork = DueWork(clock: clock.pushClock, capacity: 1)
        let start = clock.now
        let woke = Mutex(false)
        let sleeping = Task {
            await dueWork.sleep(until: start + 60_000)
            woke.withLock { $0 = true }
        }
        while dueWork.plannedWakeTime == nil { try await Task.sleep(for: .milliseconds(5)) }
        dueWork.cameDue(at: start + 90_000)
        try await Task.sleep(for: .milliseconds(200))
        #expect(!woke.withLock { $0 }, "due after the loop wakes anyway")
        dueWork.cameDue(at: start + 5_000)
        await sleeping.value
        #expect(dueWork.plannedWakeTime == nil)

        dueWork.cameDue(at: start + 90_000)
        await dueWork.sleep(until: start + 60_000)  // returns at once: the clock stands still
        #expect(clock.now == start)
    }

    /// Slots are taken while free, given back unused or as each delivery ends; with none free, a turn
    /// waits for one, at most `slotWaitLimit`.
    @Test func slotsAreTakenUpToTheCapacityAndFreedAsDeliveriesEnd() async throws {
        let clock = ManualClock()
        let dueWork = DueWork(clock: clock.pushClock, capacity: 3)
        #expect(await dueWork.takeFreeSlots() == 3)
        dueWork.release(1)
        #expect(dueWork.deliveriesInFlight == 2)
        #expect(await dueWork.takeFreeSlots() == 1)
        let waiting = Task { await dueWork.takeFreeSlots() }
        try await clock.waitForSleepers()
        dueWork.deliveryEnded()
        #expect(await waiting.value == 1, "the freed slot, without the clock moving")
        #expect(dueWork.deliveriesInFlight == 3)
        let timedOut = Task { await dueWork.takeFreeSlots() }
        try await clock.waitForSleepers()
        clock.advance(milliseconds: DueWork.slotWaitLimit)
        #expect(await timedOut.value == 0)
    }
}
