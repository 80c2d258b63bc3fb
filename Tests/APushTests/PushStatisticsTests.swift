import Testing

@testable import APush

@Suite struct PushStatisticsTests {
    @Test func countsSinceStartAndUnflushed() {
        let statistics = PushStatistics()
        statistics.count(.deduplicated)
        statistics.count(.deduplicated, by: 4)
        statistics.count(.coalescedHeld)
        #expect(statistics.sinceStart == ["deduplicated": 5, "coalesced.held": 1])
        #expect(statistics.unflushed == ["deduplicated": 5, "coalesced.held": 1])
    }

    @Test func takingTheUnflushedLeavesTheSinceStartCounts() {
        let statistics = PushStatistics()
        statistics.count(.deduplicated, by: 2)
        #expect(statistics.takeUnflushed() == ["deduplicated": 2])
        #expect(statistics.takeUnflushed().isEmpty)
        statistics.count(.deduplicated)
        #expect(statistics.unflushed == ["deduplicated": 1])
        #expect(statistics.sinceStart == ["deduplicated": 3])
    }

    @Test func restoringAddsBackWhatFailedToStore() {
        let statistics = PushStatistics()
        statistics.count(.deduplicated, by: 2)
        let taken = statistics.takeUnflushed()
        statistics.count(.deduplicated)
        statistics.restore(taken)
        #expect(statistics.unflushed == ["deduplicated": 3])
        #expect(statistics.sinceStart == ["deduplicated": 3])
    }

    @Test func concurrentCountsAreAllKept() async {
        let statistics = PushStatistics()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask { for _ in 0..<20 { statistics.count(.deduplicated) } }
            }
        }
        #expect(statistics.sinceStart["deduplicated"] == 1000)
    }
}
