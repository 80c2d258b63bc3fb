import Synchronization
import Testing

@testable import APush

@Suite struct StoreReadingTests {
    /// Counts the reads it is asked for.
    private final class Reads: Sendable {
        let count = Mutex(0)
        func read(_ value: Int?) -> Int? {
            count.withLock { $0 += 1 }
            return value
        }
    }

    @Test func probesWithinTheIntervalAreAnsweredFromMemory() async {
        let reading = StoreReading()
        let reads = Reads()
        #expect(await reading.registrations(at: 1_000) { reads.read(7) } == 7)
        #expect(await reading.registrations(at: 1_000 + StoreReading.interval - 1) { reads.read(8) } == 7)
        #expect(reads.count.withLock { $0 } == 1)
        #expect(await reading.registrations(at: 1_000 + StoreReading.interval) { reads.read(8) } == 8)
        #expect(reads.count.withLock { $0 } == 2)
    }

    @Test func aFailedReadIsRememberedLikeAGoodOne() async {
        let reading = StoreReading()
        let reads = Reads()
        #expect(await reading.registrations(at: 0) { reads.read(nil) } == nil)
        #expect(await reading.registrations(at: 10) { reads.read(3) } == nil)
        #expect(reads.count.withLock { $0 } == 1)
    }

    /// A clock set back does not keep an old reading for ever.
    @Test func aClockThatWentBackReadsAgain() async {
        let reading = StoreReading()
        let reads = Reads()
        _ = await reading.registrations(at: 100_000) { reads.read(1) }
        #expect(await reading.registrations(at: 50_000) { reads.read(2) } == 2)
    }
}
