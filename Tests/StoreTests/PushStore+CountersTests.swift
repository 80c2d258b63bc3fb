import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Counters {}
}

extension PushStoreTests.Counters {
    @Test(arguments: StoreKind.allCases)
    func incrementAddsToCounters(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.counters().isEmpty)
            try await store.increment(["pushed": 1, "held": 2])
            try await store.increment(["pushed": 3, "dropped": 1])
            try await store.increment([:])
            #expect(try await store.counters() == ["pushed": 4, "held": 2, "dropped": 1])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func counterNamesPastTheCapAreNotStored(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.counters = 2 }) { store async throws in
            try await store.increment(["a": 1, "b": 1])
            try await store.increment(["c": 1])
            try await store.increment(["a": 2])
            #expect(try await store.counters() == ["a": 3, "b": 1])
        }
    }
}
