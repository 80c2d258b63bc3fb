import Testing

@testable import Store

extension SQLitePushStoreTests {
    @Suite struct Policies {}
}

extension SQLitePushStoreTests.Policies {
    @Test(arguments: StoreKind.allCases)
    func policiesAreKeptPerAccountBesideTheDefaults(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.policy(account: nil) == nil)
            #expect(try await store.policy(account: "alice@example.org") == nil)

            try await store.setPolicy(account: nil, json: #"{"window":10}"#)
            try await store.setPolicy(account: "alice@example.org", json: #"{"window":30}"#)
            #expect(try await store.policy(account: nil) == #"{"window":10}"#)
            #expect(try await store.policy(account: "alice@example.org") == #"{"window":30}"#)
            #expect(try await store.policy(account: "bob@example.org") == nil)

            try await store.setPolicy(account: "alice@example.org", json: #"{"window":60}"#)
            #expect(try await store.policy(account: "alice@example.org") == #"{"window":60}"#)

            try await store.setPolicy(account: "alice@example.org", json: nil)
            #expect(try await store.policy(account: "alice@example.org") == nil)
            #expect(try await store.policy(account: nil) == #"{"window":10}"#)

            try await store.setPolicy(account: nil, json: nil)
            #expect(try await store.policy(account: nil) == nil)
        }
    }

    /// Every change counts, through the store or by hand: an instance sharing the store sees it.
    @Test(arguments: StoreKind.allCases)
    func everyChangeOfAPolicyCountsAGeneration(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let generation = { try await store.transaction { try $0.policyGeneration() } }
            let first = try await generation()
            try await store.setPolicy(account: nil, json: #"{"window":10}"#)
            let added = try await generation()
            #expect(added > first)
            try await store.setPolicy(account: nil, json: #"{"window":20}"#)
            let changed = try await generation()
            #expect(changed > added)
            _ = try await store.policy(account: nil)
            #expect(try await generation() == changed, "reading changes nothing")
            try await store.setPolicy(account: nil, json: nil)
            #expect(try await generation() > changed)
        }
    }
}
