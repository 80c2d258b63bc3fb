import Testing

@testable import APush

@Suite struct PolicyCacheTests {
    private var muted: PushPolicy {
        var policy = PushPolicy()
        policy.messages = false
        return policy
    }

    @Test func aPolicyIsKeptForItsGeneration() {
        var cache = PolicyCache()
        #expect(cache.policy(for: "alice@localhost", at: 3) == nil)
        cache.store(muted, for: "alice@localhost", resolvedAt: 3)
        #expect(cache.policy(for: "alice@localhost", at: 3) == muted)
    }

    /// Another instance changed a policy: the first lookup at the new generation forgets them all.
    @Test func aNewerGenerationForgetsEveryPolicy() {
        var cache = PolicyCache()
        _ = cache.policy(for: "alice@localhost", at: 3)
        cache.store(muted, for: "alice@localhost", resolvedAt: 3)
        cache.store(PushPolicy(), for: "", resolvedAt: 3)
        #expect(cache.policy(for: "alice@localhost", at: 4) == nil)
        #expect(cache.policy(for: "", at: 4) == nil)
        #expect(cache.generation == 4)
    }

    /// Issue 20, item 13: moving to a newer generation forgets only the accounts it changed, every
    /// entry when it changed the defaults or the changes are not known, and nothing when another lookup
    /// moved the entries first.
    @Test func advancingForgetsOnlyTheAccountsThatChanged() {
        var cache = PolicyCache()
        _ = cache.policy(for: "", at: 3)
        for key in ["", "alice@localhost", "bob@localhost"] { cache.store(muted, for: key, resolvedAt: 3) }
        cache.advance(from: 3, to: 5, forgetting: ["alice@localhost"])
        #expect(cache.generation == 5)
        #expect(cache.policy(for: "alice@localhost", at: 5) == nil)
        #expect(cache.policy(for: "bob@localhost", at: 5) == muted)
        #expect(cache.policy(for: "", at: 5) == muted)

        cache.advance(from: 3, to: 6, forgetting: ["bob@localhost"])
        #expect(cache.generation == 5, "another lookup moved on first")
        #expect(cache.policy(for: "bob@localhost", at: 5) == muted)

        cache.advance(from: 5, to: 6, forgetting: [""])
        #expect(cache.policy(for: "bob@localhost", at: 6) == nil, "the defaults changed: every entry goes")
        cache.store(muted, for: "bob@localhost", resolvedAt: 6)
        cache.advance(from: 6, to: 9, forgetting: nil)
        #expect(cache.policy(for: "bob@localhost", at: 9) == nil, "changes not known: every entry goes")
    }

    /// A publish began reading the old policy; another saw the change meanwhile: the old resolution is
    /// not kept, and the slow publish's older generation neither finds nor forgets the new entries.
    @Test func aPolicyResolvedAtAnOlderGenerationIsNotKept() {
        var cache = PolicyCache()
        _ = cache.policy(for: "alice@localhost", at: 3)
        _ = cache.policy(for: "alice@localhost", at: 4)
        cache.store(muted, for: "alice@localhost", resolvedAt: 3)
        #expect(cache.policy(for: "alice@localhost", at: 4) == nil)
        cache.store(PushPolicy(), for: "alice@localhost", resolvedAt: 4)
        #expect(cache.policy(for: "alice@localhost", at: 3) == nil)
        #expect(cache.policy(for: "alice@localhost", at: 4) == PushPolicy())
    }

    /// One entry per account that was ever pushed to would grow with the store (500,000 accounts in a
    /// store of a million registrations): the cache keeps a bounded number, and the newest always.
    @Test func aCacheOfManyAccountsStaysBounded() {
        var cache = PolicyCache()
        _ = cache.policy(for: "", at: 0)
        let accounts = (0..<10_000).map { "user\($0)@localhost" }
        for account in accounts { cache.store(PushPolicy(), for: account, resolvedAt: 0) }
        #expect(accounts.filter { cache.policy(for: $0, at: 0) != nil }.count <= PolicyCache.capacity)
        #expect(cache.policy(for: accounts[accounts.count - 1], at: 0) == PushPolicy())
    }
}
