import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Dedupe {}
}

extension PushStoreTests.Dedupe {
    @Test(arguments: StoreKind.allCases)
    func firstSightingIsTrueOncePerPeriod(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            #expect(try await store.firstSighting(registrationID: id, key: "k", at: 1_000, since: 0))
            #expect(try await !store.firstSighting(registrationID: id, key: "k", at: 2_000, since: 0))
            #expect(try await !store.firstSighting(registrationID: id, key: "k", at: 2_000, since: 1_000))
            // The old sighting is before `since`: it counts as new and is remembered afresh.
            #expect(try await store.firstSighting(registrationID: id, key: "k", at: 5_000, since: 1_001))
            #expect(try await !store.firstSighting(registrationID: id, key: "k", at: 6_000, since: 4_000))
            #expect(try await store.firstSighting(registrationID: id, key: "other", at: 6_000, since: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func sightingsAreKeptPerRegistration(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let one = try await registered(store, token: "one").id
            let two = try await registered(store, token: "two").id
            #expect(try await store.firstSighting(registrationID: one, key: "k", at: 1_000, since: 0))
            #expect(try await store.firstSighting(registrationID: two, key: "k", at: 1_000, since: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func dedupeKeysPastTheCapForgetTheOldest(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.sightingsPerRegistration = 3 }) { store async throws in
            let id = try await registered(store).id
            for index in 0..<5 {
                #expect(
                    try await store.firstSighting(registrationID: id, key: "k\(index)", at: Timestamp(index), since: 0))
            }
            #expect(try await firstColumn(store, "SELECT key FROM sightings ORDER BY key") == ["k2", "k3", "k4"])
            #expect(try await !store.firstSighting(registrationID: id, key: "k4", at: 9, since: 0))
        }
    }
}
