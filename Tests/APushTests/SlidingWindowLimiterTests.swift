import Testing

@testable import APush

@Suite struct SlidingWindowLimiterTests {
    @Test func aKeyGetsItsLimitInAWindowAndMoreAsOldUsesAge() {
        var limiter = SlidingWindowLimiter(limit: 3, window: 60_000, maximumKeys: 10)
        #expect(limiter.take("alice", at: 0) == nil)
        #expect(limiter.take("alice", at: 10_000) == nil)
        #expect(limiter.take("alice", at: 20_000) == nil)
        #expect(limiter.take("alice", at: 30_000) == 60_000)
        #expect(limiter.take("bob", at: 30_000) == nil)
        #expect(limiter.take("alice", at: 59_999) == 60_000)
        #expect(limiter.take("alice", at: 60_000) == nil)
        #expect(limiter.take("alice", at: 60_001) == 70_000)
    }

    @Test func refusedTriesDoNotCount() {
        var limiter = SlidingWindowLimiter(limit: 1, window: 1000, maximumKeys: 10)
        #expect(limiter.take("alice", at: 0) == nil)
        for at in stride(from: 100, to: 1000, by: 100) { #expect(limiter.take("alice", at: Int64(at)) == 1000) }
        #expect(limiter.take("alice", at: 1000) == nil)
    }

    @Test func itRemembersAtMostItsKeysForgettingTheIdleFirst() {
        var limiter = SlidingWindowLimiter(limit: 1, window: 1000, maximumKeys: 3)
        #expect(limiter.take("a", at: 0) == nil)
        #expect(limiter.take("b", at: 1500) == nil)
        #expect(limiter.take("c", at: 1600) == nil)
        // `a` has aged out: it is the one forgotten.
        #expect(limiter.take("d", at: 1700) == nil)
        #expect(limiter.keyCount == 3)
        #expect(limiter.take("b", at: 1800) == 2500)
        // All are recent: the one used longest ago (`b`) makes room.
        #expect(limiter.take("e", at: 1900) == nil)
        #expect(limiter.keyCount == 3)
        #expect(limiter.take("c", at: 1950) == 2600)
        #expect(limiter.take("b", at: 1950) == nil)
    }
}
