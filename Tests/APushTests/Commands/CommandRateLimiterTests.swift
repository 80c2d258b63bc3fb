import Store
import Testing

@testable import APush

@Suite struct CommandRateLimiterTests {
    @Test func anAccountRunsItsBurstThenOneCommandPerInterval() {
        var limiter = CommandRateLimiter(burst: 3, interval: 1000, capacity: 8)
        #expect((0..<3).map { _ in limiter.take("alice", at: 0) } == [nil, nil, nil])
        #expect(limiter.take("alice", at: 0) == 1000, "its bucket is empty until one command fills back")
        #expect(limiter.take("alice", at: 999) == 1000)
        #expect(limiter.take("alice", at: 1000) == nil)
        #expect(limiter.take("alice", at: 1000) == 2000)
        // Quiet long enough, the whole burst is there again, no more.
        #expect((0..<4).map { _ in limiter.take("alice", at: 60_000) } == [nil, nil, nil, 61_000])
    }

    @Test func accountsHaveBucketsOfTheirOwn() {
        var limiter = CommandRateLimiter(burst: 1, interval: 1000, capacity: 8)
        #expect(limiter.take("alice", at: 0) == nil)
        #expect(limiter.take("alice", at: 0) == 1000)
        #expect(limiter.take("bob", at: 0) == nil)
    }

    /// Past its capacity the limiter forgets the accounts whose bucket is full again; when none is, a
    /// new account waits rather than the limiter growing.
    @Test func itTracksAtMostItsCapacityOfAccounts() {
        var limiter = CommandRateLimiter(burst: 2, interval: 1000, capacity: 2)
        #expect(limiter.take("a", at: 0) == nil)
        #expect(limiter.take("b", at: 0) == nil)
        #expect(limiter.take("c", at: 0) == 1000, "both buckets still fill: c waits")
        #expect(limiter.tracked == 2)
        #expect(limiter.take("c", at: 1000) == nil, "a and b are full again and forgotten")
        #expect(limiter.tracked == 1)
        for index in 0..<100 { _ = limiter.take("user\(index)", at: 1000) }
        #expect(limiter.tracked == 2)
    }
}
