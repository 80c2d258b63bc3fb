import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Policies {}
}

extension PushStoreTests.Policies {
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

extension PushStoreTests.Policies {
    /// Issue 20, item 13: every generation names the account whose policy it changed (`""` the
    /// defaults), so an instance forgets only those; past the log's reach it learns nothing (nil).
    @Test(arguments: StoreKind.allCases)
    func eachPolicyGenerationNamesTheAccountItChanged(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let start = try await store.transaction { try $0.policyGeneration() }
            try await store.setPolicy(account: "alice@example.org", json: #"{"window":10}"#)
            try await store.setPolicy(account: "alice@example.org", json: #"{"window":20}"#)
            let afterAlice = try await store.transaction { try $0.policyGeneration() }
            #expect(afterAlice == start + 2)
            try await store.setPolicy(account: "bob@example.org", json: #"{"window":10}"#)
            try await store.setPolicy(account: "bob@example.org", json: nil)
            try await store.setPolicy(account: nil, json: #"{"window":10}"#)
            let now = try await store.transaction { try $0.policyGeneration() }
            #expect(
                try await store.accountsWithPolicyChanged(after: start, through: afterAlice) == ["alice@example.org"])
            #expect(
                try await store.accountsWithPolicyChanged(after: afterAlice, through: now) == ["bob@example.org", ""])
            #expect(try await store.accountsWithPolicyChanged(after: now, through: now) == [])

            // The log keeps the latest changes only: an instance further behind than that learns nothing.
            for index in 0..<StoreLimits.policyChangesKept {
                try await store.setPolicy(account: "carol@example.org", json: #"{"window":\#(index % 60)}"#)
            }
            let latest = try await store.transaction { try $0.policyGeneration() }
            #expect(try await store.accountsWithPolicyChanged(after: now, through: latest) == ["carol@example.org"])
            #expect(try await store.accountsWithPolicyChanged(after: now - 1, through: latest) == nil)
            #expect(try await store.accountsWithPolicyChanged(after: start, through: latest) == nil)
        }
    }
}
