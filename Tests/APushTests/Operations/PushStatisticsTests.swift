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

    /// What a transaction's attempt counts is kept aside, added only when the caller says it committed.
    @Test func countsMadeAsideAreAddedOnlyWhenTaken() {
        let statistics = PushStatistics()
        let (value, aside) = PushStatistics.countingAside { () -> Int in
            statistics.count(.deduplicated, by: 2)
            statistics.count(.coalescedHeld)
            return 7
        }
        #expect(value == 7)
        #expect(statistics.sinceStart.isEmpty)
        statistics.count(.deduplicated)
        #expect(statistics.sinceStart == ["deduplicated": 1], "outside the attempt, counted at once")
        statistics.add(aside)
        #expect(statistics.sinceStart == ["deduplicated": 3, "coalesced.held": 1])
        #expect(statistics.unflushed == ["deduplicated": 3, "coalesced.held": 1])
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

extension PushStatisticsTests {
    @Test func theCountsByStatisticAreTheSameCountsAsByName() {
        let statistics = PushStatistics()
        statistics.count(.push(.message, .accepted), by: 3)
        statistics.count(.droppedByPolicy)
        let byStatistic = statistics.sinceStartByStatistic
        #expect(byStatistic.count == 2)
        for (statistic, value) in byStatistic { #expect(statistics.sinceStart[statistic.name] == value) }
    }

    @Test func aDurationGoesToTheFirstBucketItFitsAndTheSumKeepsIt() {
        var histogram = LatencyHistogram()
        for milliseconds: Int64 in [0, 5, 6, 30_000, 30_001, -3] { histogram.observe(milliseconds: milliseconds) }
        #expect(histogram.count == 6)
        #expect(histogram.sumMilliseconds == 60_012)
        let cumulative = histogram.cumulative
        #expect(cumulative.first?.upperBound == 0.005 && cumulative.first?.count == 3)
        #expect(cumulative[1].upperBound == 0.01 && cumulative[1].count == 4)
        #expect(cumulative[cumulative.count - 2].upperBound == 30 && cumulative[cumulative.count - 2].count == 5)
        #expect(cumulative.last?.upperBound == .infinity && cumulative.last?.count == 6)
    }

    @Test func eachTimingHasItsOwnHistogram() {
        let statistics = PushStatistics()
        statistics.observe(.upstream, milliseconds: 40)
        #expect(statistics.histogram(.upstream).count == 1)
        #expect(statistics.histogram(.publish).count == 0)
    }
}
