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
}
