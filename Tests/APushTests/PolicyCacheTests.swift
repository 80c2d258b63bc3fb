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

    /// One entry per account that was ever pushed to would grow with the store (500,000 accounts in a
    /// store of a million registrations): the cache keeps a bounded number, and the newest always.
    @Test func aCacheOfManyAccountsStaysBounded() {
        var cache = PolicyCache()
        let accounts = (0..<10_000).map { "user\($0)@localhost" }
        for account in accounts { cache.store(PushPolicy(), for: account, resolvedAt: cache.generation) }
        #expect(accounts.filter { cache.policy(for: $0) != nil }.count <= PolicyCache.capacity)
        #expect(cache.policy(for: accounts[accounts.count - 1]) == PushPolicy())
    }
}
