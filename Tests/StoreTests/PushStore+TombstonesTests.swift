import SQLite
import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Tombstones {}
}

extension PushStoreTests.Tombstones {
    @Test(arguments: StoreKind.allCases)
    func buriedTokenIsBuriedOnlyForItsModuleAndSinceItsDeath(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await !store.isBuried(token: "t", pushModule: "apns", account: nil, since: 0))
            try await store.buryDeadToken("t", pushModule: "apns", at: 1_000)
            #expect(try await store.isBuried(token: "t", pushModule: "apns", account: nil, since: 500))
            #expect(try await store.isBuried(token: "t", pushModule: "apns", account: nil, since: 1_000))
            #expect(try await !store.isBuried(token: "t", pushModule: "apns", account: nil, since: 1_001))
            #expect(try await !store.isBuried(token: "t", pushModule: "apns-sandbox", account: nil, since: 0))
            #expect(try await !store.isBuried(token: "u", pushModule: "apns", account: nil, since: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func buryingAgainMovesTheTimeOfDeath(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.buryDeadToken("t", pushModule: "fcm", at: 1_000)
            try await store.buryDeadToken("t", pushModule: "fcm", at: 5_000)
            #expect(try await store.isBuried(token: "t", pushModule: "fcm", account: nil, since: 3_000))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func exhumeLiftsOnlyThatTombstone(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.buryDeadToken("t", pushModule: "apns", at: 1_000)
            try await store.buryDeadToken("t", pushModule: "apns-sandbox", at: 1_000)
            try await store.exhume(token: "t", pushModule: "apns", account: "alice@example.org")
            #expect(try await !store.isBuried(token: "t", pushModule: "apns", account: nil, since: 0))
            #expect(try await store.isBuried(token: "t", pushModule: "apns-sandbox", account: nil, since: 0))
            try await store.exhume(token: "never-buried", pushModule: "apns", account: "alice@example.org")
        }
    }
}

extension PushStoreTests.Tombstones {
    /// A removal buries the token for its account only; a dead token, for every account.
    @Suite struct PerAccount {
        private let alice = "alice@example.org"
        private let bob = "bob@example.org"
    }
}

extension PushStoreTests.Tombstones.PerAccount {
    @Test(arguments: StoreKind.allCases)
    func aRemovalByCommandBuriesOnlyThatAccountsRegistration(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store, account: alice)
            let bob = try await registered(store, account: bob)
            #expect(try await store.retire(registrationID: alice.id, at: 1_000) == alice)
            #expect(try await store.registration(id: alice.id) == nil)
            #expect(try await store.registration(id: bob.id) == bob)
            #expect(try await store.isBuried(token: "token-1", pushModule: "fcm", account: self.alice, since: 0))
            #expect(try await !store.isBuried(token: "token-1", pushModule: "fcm", account: self.bob, since: 0))
            #expect(try await !store.isBuried(token: "token-1", pushModule: "fcm", account: nil, since: 0))
            #expect(try await store.retire(registrationID: alice.id, at: 1_000) == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRemovalOfTheUnnamedRegistrationBuriesItForStockPublishesOnly(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let stock = try await registered(store, account: nil)
            try await store.retire(registrationID: stock.id, at: 1_000)
            #expect(try await store.isBuried(token: "token-1", pushModule: "fcm", account: nil, since: 0))
            #expect(try await !store.isBuried(token: "token-1", pushModule: "fcm", account: alice, since: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aDeadTokenIsRemovedAndBuriedForEveryAccount(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await registered(store, account: alice)
            _ = try await registered(store, account: bob)
            _ = try await store.register(
                request(domain: "other.example", account: nil), freshCollapseKey: collapseKeyA,
                now: 1_000)
            let otherModule = try await store.register(
                request(pushModule: "apns", account: "carol@example.org"),
                freshCollapseKey: collapseKeyA, now: 1_000)
            #expect(try await store.buryDeadToken("token-1", pushModule: "fcm", at: 2_000) == 3)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 1)
            #expect(try await store.registration(id: otherModule.id) == otherModule)
            for account in [alice, bob, nil] {
                #expect(try await store.isBuried(token: "token-1", pushModule: "fcm", account: account, since: 0))
                #expect(try await store.isBuried(token: "token-1", pushModule: nil, account: account, since: 0))
                #expect(try await !store.isBuried(token: "token-1", pushModule: "apns", account: account, since: 0))
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func enablingAgainLiftsTheDeathAndTheAccountsOwnRemovalOnly(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.retire(registrationID: try await registered(store, account: alice).id, at: 1_000)
            try await store.retire(registrationID: try await registered(store, account: bob).id, at: 1_000)
            try await store.exhume(token: "token-1", pushModule: "fcm", account: alice)
            #expect(try await !store.isBuried(token: "token-1", pushModule: "fcm", account: alice, since: 0))
            #expect(try await store.isBuried(token: "token-1", pushModule: "fcm", account: bob, since: 0))

            try await store.buryDeadToken("token-1", pushModule: "fcm", at: 2_000)
            try await store.exhume(token: "token-1", pushModule: "fcm", account: alice)
            #expect(try await !store.isBuried(token: "token-1", pushModule: "fcm", account: alice, since: 0))
            #expect(try await store.isBuried(token: "token-1", pushModule: "fcm", account: bob, since: 0))
        }
    }

    /// The publish path's check and registration are one transaction: a buried token is not registered.
    @Test(arguments: StoreKind.allCases)
    func registerUnlessBuriedStoresNothingForABuriedTokenOfThatAccount(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.retire(registrationID: try await registered(store, account: alice).id, at: 1_000)
            #expect(
                try await store.registerUnlessBuried(
                    request(account: alice), freshCollapseKey: collapseKeyA,
                    now: 2_000, buriedSince: 500) == nil)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 0)
            // Older than the window: registered again.
            #expect(
                try await store.registerUnlessBuried(
                    request(account: alice), freshCollapseKey: collapseKeyA,
                    now: 2_000, buriedSince: 1_500) != nil)
            let bob = try #require(
                try await store.registerUnlessBuried(
                    request(account: bob), freshCollapseKey: collapseKeyA, now: 2_000, buriedSince: 500))
            #expect(try await store.registration(id: bob.id) == bob)

            try await store.buryDeadToken("token-1", pushModule: "fcm", at: 3_000)
            for account in [self.alice, self.bob, nil] {
                #expect(
                    try await store.registerUnlessBuried(
                        request(account: account), freshCollapseKey: collapseKeyA,
                        now: 4_000, buriedSince: 2_500) == nil)
            }
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 0)
        }
    }

    /// Removing and burying are one transaction: a bury that fails leaves the registration in place.
    @Test(arguments: StoreKind.allCases)
    func aRetireWhoseBuryFailsRemovesNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store, account: alice)
            try await executeScript(
                store,
                sqlite: """
                    CREATE TEMP TRIGGER refuse_burial BEFORE INSERT ON tombstones
                        BEGIN SELECT RAISE(ABORT, 'injected'); END;
                    """,
                postgresql: """
                    CREATE FUNCTION refuse_burial() RETURNS trigger LANGUAGE plpgsql
                        AS $$ BEGIN RAISE EXCEPTION 'injected'; END $$;
                    CREATE TRIGGER refuse_burial BEFORE INSERT ON tombstones
                        FOR EACH ROW EXECUTE FUNCTION refuse_burial();
                    """)
            await #expect { try await store.retire(registrationID: alice.id, at: 1_000) } throws: { isStoreError($0) }
            await #expect {
                try await store.buryDeadToken("token-1", pushModule: "fcm", at: 1_000)
            } throws: { isStoreError($0) }
            #expect(try await store.registration(id: alice.id) == alice)
            try await executeScript(
                store, sqlite: "DROP TRIGGER refuse_burial", postgresql: "DROP TRIGGER refuse_burial ON tombstones")
            try await store.retire(registrationID: alice.id, at: 1_000)
            #expect(try await store.registration(id: alice.id) == nil)
        }
    }
}
