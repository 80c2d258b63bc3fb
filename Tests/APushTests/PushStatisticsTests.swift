import Testing
@testable import APush

@Suite struct PushStatisticsTests {
    @Test func countsSinceStartAndUnflushed() {
        let statistics = PushStatistics()
        statistics.count("a")
        statistics.count("a", by: 4)
        statistics.count("b")
        #expect(statistics.sinceStart == ["a": 5, "b": 1])
        #expect(statistics.unflushed == ["a": 5, "b": 1])
    }

    @Test func takingTheUnflushedLeavesTheSinceStartCounts() {
        let statistics = PushStatistics()
        statistics.count("a", by: 2)
        #expect(statistics.takeUnflushed() == ["a": 2])
        #expect(statistics.takeUnflushed().isEmpty)
        statistics.count("a")
        #expect(statistics.unflushed == ["a": 1])
        #expect(statistics.sinceStart == ["a": 3])
    }

    @Test func restoringAddsBackWhatFailedToStore() {
        let statistics = PushStatistics()
        statistics.count("a", by: 2)
        let taken = statistics.takeUnflushed()
        statistics.count("a")
        statistics.restore(taken)
        #expect(statistics.unflushed == ["a": 3])
        #expect(statistics.sinceStart == ["a": 3])
    }

    @Test func concurrentCountsAreAllKept() async {
        let statistics = PushStatistics()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask { for _ in 0..<20 { statistics.count("n") } }
            }
        }
        #expect(statistics.sinceStart["n"] == 1000)
    }
}
