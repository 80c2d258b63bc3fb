import Testing

@testable import APush

@Suite struct PolicyCacheTests {
    @Test func aPolicyReadBeforeAChangeIsNotCachedAfterIt() {
        var cache = PolicyCache()
        let generation = cache.generation
        // A publish began reading the old policy; the account saved a new one meanwhile.
        cache.invalidate()
        var stale = PushPolicy()
        stale.messages = false
        cache.store(stale, for: "alice@localhost", resolvedAt: generation)
        #expect(cache.policy(for: "alice@localhost") == nil)
        cache.store(PushPolicy(), for: "alice@localhost", resolvedAt: cache.generation)
        #expect(cache.policy(for: "alice@localhost") == PushPolicy())
    }
}
