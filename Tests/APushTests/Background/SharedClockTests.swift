import Store
import Synchronization
import Testing
import TestSupport

@testable import APush

@Suite struct SharedClockTests {
    @Test func aReadingIsTakenAsMadeAtTheMidpointOfItsRoundTrip() {
        var offset = SharedClock.Offset()
        #expect(record(&offset, sent: 1_000, reading: 5_000, received: 1_010))
        #expect(offset.milliseconds == 3_995)
        #expect(record(&offset, sent: 2_000, reading: 1_000, received: 2_000))
        #expect(offset.milliseconds == -1_000)
    }

    /// A long round trip says little of when the reading was made: it is used only while nothing
    /// better is known. A negative one (the base clock set back meanwhile) is never used.
    @Test func aLongOrNegativeRoundTripIsNotUsedOnceAnOffsetIsKnown() {
        var offset = SharedClock.Offset()
        #expect(!record(&offset, sent: 1_000, reading: 9_000, received: 999))
        #expect(!offset.isMeasured)
        #expect(record(&offset, sent: 1_000, reading: 9_000, received: 4_000))
        #expect(offset.milliseconds == 6_500)
        #expect(!record(&offset, sent: 5_000, reading: 20_000, received: 6_001))
        #expect(offset.milliseconds == 6_500)
        #expect(record(&offset, sent: 5_000, reading: 20_000, received: 6_000))
        #expect(offset.milliseconds == 14_500)
    }

    /// The clock reads the shared time once measured, re-measures on the first reading past the
    /// interval, keeps the last offset when a measurement fails, and sleeps until the shared deadline.
    @Test func itReadsAndSleepsOnTheSharedTimeAndMeasuresAgainAfterTheInterval() async throws {
        let base = ManualClock()
        let shared = Mutex<(offset: Timestamp, fails: Bool, readings: Int)>((60_000, false, 0))
        let clock = SharedClock(base: base.pushClock) {
            try shared.withLock { shared in
                shared.readings += 1
                if shared.fails { throw StoreUnavailableError(cause: CancellationError()) }
                return base.now + shared.offset
            }
        }
        await clock.ready()
        #expect(clock.clock.now() == base.now + 60_000)

        shared.withLock { $0 = (120_000, true, $0.readings) }
        base.advance(milliseconds: SharedClock.remeasureInterval)
        _ = clock.clock.now()
        try await waitUntil("a second reading") { shared.withLock { $0.readings } == 2 }
        try await Task.sleep(for: .milliseconds(50))
        #expect(clock.clock.now() == base.now + 60_000, "a failed measurement keeps the last offset")
        #expect(shared.withLock { $0.readings } == 2, "not again before the interval")

        shared.withLock { $0.fails = false }
        base.advance(milliseconds: SharedClock.remeasureInterval)
        _ = clock.clock.now()
        try await waitUntil("measured again") { clock.clock.now() == base.now + 120_000 }

        let deadline = clock.clock.now() + 5_000
        let slept = Task { try await clock.clock.sleep(deadline) }
        try await base.waitForSleepers()
        base.advance(milliseconds: 4_999)
        #expect(base.sleepers == 1)
        base.advance(milliseconds: 1)
        try await slept.value
        #expect(clock.clock.now() == deadline)
    }

    /// Where one process alone uses the store, its own clock is the clock, and it is not asked again.
    @Test func withAStoreOfItsOwnTheBaseClockIsTheClock() async throws {
        let base = ManualClock()
        let readings = Mutex(0)
        let clock = SharedClock(base: base.pushClock) {
            readings.withLock { $0 += 1 }
            return nil
        }
        await clock.ready()
        #expect(clock.clock.now() == base.now)
        base.advance(milliseconds: 2 * SharedClock.remeasureInterval)
        #expect(clock.clock.now() == base.now)
        try await Task.sleep(for: .milliseconds(50))
        #expect(readings.withLock { $0 } == 1)
    }

    /// `record` outside `#expect`, which cannot take a mutating call.
    private func record(_ offset: inout SharedClock.Offset, sent: Timestamp, reading: Timestamp, received: Timestamp)
        -> Bool
    {
        offset.record(sent: sent, reading: reading, received: received)
    }
}
