import SQLCore
import SQLite
import SQLiteTesting
import Sealing
import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Registrations {}
}

extension PushStoreTests.Registrations {
    @Test(arguments: StoreKind.allCases)
    func registerInsertsANewRegistration(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let new = request(calls: .also, wantsReads: true)
            let registration = try await store.register(new, freshCollapseKey: collapseKeyA, now: 1_000)
            #expect(registration.id > 0)
            #expect(registration.domain == new.domain)
            #expect(registration.token == new.token)
            #expect(registration.pushModule == new.pushModule)
            #expect(registration.account == new.account)
            #expect(registration.deviceKey == new.deviceKey)
            #expect(registration.calls == .also)
            #expect(registration.wantsReads)
            #expect(registration.collapseKey == collapseKeyA)
            #expect(registration.createdAt == 1_000)
            #expect(registration.lastPushAt == nil && registration.lastError == nil)
            #expect(registration.lastErrorAt == nil && registration.lastWakeAt == nil)
            #expect(registration.pushCount == 0 && registration.errorCount == 0)
            #expect(
                try await store.registration(domain: new.domain, token: new.token, account: new.account)
                    == registration)
            #expect(try await store.registration(id: registration.id) == registration)
        }
    }

    @Test(arguments: StoreKind.allCases, CallsMode.allCases)
    func everyCallsModeRoundTrips(kind: StoreKind, calls: CallsMode) async throws {
        try await withStore(kind) { store in
            let registration = try await store.register(request(calls: calls), freshCollapseKey: collapseKeyA, now: 1)
            #expect(try await store.registration(id: registration.id)?.calls == calls)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func reregisteringUpdatesInPlaceKeepingIDAndCreationTime(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = try await store.register(request(), freshCollapseKey: collapseKeyA, now: 1_000)
            try await store.recordPush(registrationID: first.id, at: 1_500, error: nil)
            let changed = request(
                pushModule: "apns-voip", account: "alice@example.org", calls: .only,
                wantsReads: true)
            let second = try await store.register(changed, freshCollapseKey: collapseKeyB, now: 2_000)
            #expect(second.id == first.id)
            #expect(second.createdAt == 1_000)
            #expect(second.pushModule == "apns-voip")
            #expect(second.calls == .only)
            #expect(second.wantsReads)
            #expect(second.pushCount == 1 && second.lastPushAt == 1_500)
            #expect(try await store.registration(id: first.id) == second)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func reregisteringWithoutAccountKeepsTheKnownAccount(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await store.register(
                request(account: "alice@example.org"), freshCollapseKey: collapseKeyA,
                now: 1_000)
            let anonymous = try await store.register(
                request(account: nil, calls: .also),
                freshCollapseKey: collapseKeyA, now: 2_000)
            #expect(anonymous.id == alice.id)
            #expect(anonymous.account == "alice@example.org")
            #expect(try await store.registration(id: alice.id)?.account == "alice@example.org")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func unchangedDeviceKeyKeepsTheCollapseKey(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.register(request(deviceKey: [7, 7]), freshCollapseKey: collapseKeyA, now: 1_000)
            let again = try await store.register(
                request(deviceKey: [7, 7]), freshCollapseKey: collapseKeyB,
                now: 2_000)
            #expect(again.collapseKey == collapseKeyA)
            #expect(try await store.registration(id: again.id)?.collapseKey == collapseKeyA)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func changedDeviceKeyTakesTheFreshCollapseKey(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.register(request(deviceKey: [7, 7]), freshCollapseKey: collapseKeyA, now: 1_000)
            let rekeyed = try await store.register(
                request(deviceKey: [8, 8]), freshCollapseKey: collapseKeyB,
                now: 2_000)
            #expect(rekeyed.deviceKey == [8, 8])
            #expect(rekeyed.collapseKey == collapseKeyB)
            let stored = try await store.registration(id: rekeyed.id)
            #expect(stored?.deviceKey == [8, 8])
            #expect(stored?.collapseKey == collapseKeyB)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func sameTokenInDifferentDomainsIsTwoRegistrations(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let one = try await store.register(
                request(domain: "one.example", token: "shared"),
                freshCollapseKey: collapseKeyA, now: 1_000)
            let two = try await store.register(
                request(domain: "two.example", token: "shared"),
                freshCollapseKey: collapseKeyB, now: 2_000)
            #expect(one.id != two.id)
            #expect(try await store.registration(domain: "one.example", token: "shared", account: nil) == one)
            #expect(try await store.registration(domain: "two.example", token: "shared", account: nil) == two)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func lookupsOfUnknownRegistrationsFindNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let known = try await registered(store)
            #expect(try await store.registration(domain: "example.org", token: "other", account: nil) == nil)
            #expect(try await store.registration(domain: "other.example", token: known.token, account: nil) == nil)
            #expect(try await store.registration(id: known.id + 1) == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func listingFiltersByAccountDomainAndModuleWithPaging(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let specs: [(domain: String, account: String?, module: String)] = [
                ("a.example", "alice@a.example", "fcm"),
                ("a.example", "alice@a.example", "apns"),
                ("a.example", "bob@a.example", "fcm"),
                ("b.example", "alice@a.example", "fcm"),
                ("b.example", nil, "fcm"),
            ]
            var ids: [Int64] = []
            for (index, spec) in specs.enumerated() {
                let new = request(
                    domain: spec.domain, token: "token-\(index)", pushModule: spec.module,
                    account: spec.account)
                ids.append(try await store.register(new, freshCollapseKey: collapseKeyA, now: 1_000).id)
            }
            func listed(_ filter: RegistrationFilter, limit: Int = 100, offset: Int = 0) async throws -> [Int64] {
                try await store.registrations(matching: filter, limit: limit, offset: offset).map(\.id)
            }

            #expect(try await listed(RegistrationFilter()) == ids)
            #expect(try await listed(RegistrationFilter(account: "alice@a.example")) == [ids[0], ids[1], ids[3]])
            #expect(try await listed(RegistrationFilter(domain: "b.example")) == [ids[3], ids[4]])
            #expect(try await listed(RegistrationFilter(pushModule: "apns")) == [ids[1]])
            #expect(
                try await listed(
                    RegistrationFilter(
                        account: "alice@a.example", domain: "a.example",
                        pushModule: "fcm")) == [ids[0]])
            #expect(try await listed(RegistrationFilter(account: "nobody@a.example")).isEmpty)
            #expect(try await listed(RegistrationFilter(fingerprint: Fingerprint.of("token-3"))) == [ids[3]])
            #expect(
                try await listed(RegistrationFilter(account: "alice@a.example", fingerprint: Fingerprint.of("token-1")))
                    == [ids[1]])
            #expect(
                try await listed(RegistrationFilter(account: "bob@a.example", fingerprint: Fingerprint.of("token-1")))
                    .isEmpty)

            #expect(try await listed(RegistrationFilter(), limit: 2) == [ids[0], ids[1]])
            #expect(try await listed(RegistrationFilter(), limit: 2, offset: 2) == [ids[2], ids[3]])
            #expect(try await listed(RegistrationFilter(), limit: 2, offset: 4) == [ids[4]])
            #expect(try await listed(RegistrationFilter(), limit: 2, offset: 5).isEmpty)
            #expect(try await listed(RegistrationFilter(pushModule: "fcm"), limit: 2, offset: 1) == [ids[2], ids[3]])

            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 5)
            #expect(try await store.countRegistrations(matching: RegistrationFilter(account: "alice@a.example")) == 3)
            #expect(
                try await store.countRegistrations(
                    matching: RegistrationFilter(
                        domain: "a.example",
                        pushModule: "fcm")) == 2)
            #expect(try await store.countRegistrations(matching: RegistrationFilter(domain: "c.example")) == 0)
            #expect(
                try await store.countRegistrations(matching: RegistrationFilter(fingerprint: Fingerprint.of("token-4")))
                    == 1)
        }
    }

    /// Among a million registrations an account's list and a lookup by fingerprint must not read them
    /// all: SQLite's plan for each filter an operator or a user sends goes through an index.
    @Test(arguments: [
        (RegistrationFilter(account: "alice@example.org"), "registrations_by_account"),
        (RegistrationFilter(account: "alice@example.org", domain: "example.org"), "registrations_by_account"),
        (RegistrationFilter(fingerprint: "#1a2b3c4d"), "registrations_by_fingerprint"),
        (RegistrationFilter(domain: "example.org", fingerprint: "#1a2b3c4d"), "registrations_by_fingerprint"),
    ])
    func listingsByAccountOrFingerprintUseAnIndex(filter: RegistrationFilter, index: String) async throws {
        let store = try SQLitePushStore(.memory)
        for query in [
            SQLitePushStore.listing(filter, limit: 50, offset: 0), SQLitePushStore.counting(filter),
        ] {
            let plan = try await store.run { database in
                try database.query("EXPLAIN QUERY PLAN " + query.sql, query.bindings)
                    .map { try $0.decode("detail", \.stringValue) }
            }
            #expect(
                plan.contains { $0.contains("USING INDEX \(index)") || $0.contains("USING COVERING INDEX \(index)") },
                "\(plan)")
            #expect(!plan.contains { $0.hasPrefix("SCAN registrations") }, "\(plan)")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeRegistrationTakesEverythingKeptForIt(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let doomed = try await registered(store, token: "doomed")
            let kept = try await registered(store, token: "kept")
            for registration in [doomed, kept] {
                try await openWindow(store, registrationID: registration.id, chat: "bob@example.org", windowEnd: 5_000)
                #expect(try await store.firstSighting(registrationID: registration.id, key: "m1", at: 1_000, since: 0))
                try await store.rememberCall(
                    PendingCall(
                        registrationID: registration.id, sid: "s1",
                        chat: "bob@example.org", caller: "bob@example.org",
                        media: ["audio"], at: 1_000))
                try await store.enqueueRetry(retry(registration.id, nextAt: 2_000))
            }

            try await store.retire(registrationID: doomed.id, at: 2_000)

            #expect(try await store.registration(id: doomed.id) == nil)
            #expect(try await store.chats(registrationID: doomed.id).isEmpty)
            #expect(try await store.takeCall(registrationID: doomed.id, sid: "s1", chat: nil) == nil)
            #expect(try await store.dueWindows(at: 10_000, limit: 10).map(\.registrationID) == [kept.id])
            #expect(
                try await store.claimDueRetries(at: 10_000, limit: 10, leaseUntil: 20_000).map(\.registrationID)
                    == [kept.id])
            // The other registration's state is untouched.
            #expect(try await store.registration(id: kept.id) == kept)
            #expect(try await store.chats(registrationID: kept.id).count == 1)
            #expect(try await !store.firstSighting(registrationID: kept.id, key: "m1", at: 2_000, since: 0))
            #expect(try await store.takeCall(registrationID: kept.id, sid: "s1", chat: nil) != nil)
        }
    }

    @Test func removeRegistrationLeavesNoRowsBehind() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            let doomed = try await registered(store)
            try await openWindow(store, registrationID: doomed.id, chat: "bob@example.org", windowEnd: 5_000)
            _ = try await store.firstSighting(registrationID: doomed.id, key: "m1", at: 1_000, since: 0)
            try await store.rememberCall(
                PendingCall(
                    registrationID: doomed.id, sid: "s1", chat: "c", caller: "c",
                    media: [], at: 1_000))
            try await store.enqueueRetry(retry(doomed.id, nextAt: 2_000))

            try await store.retire(registrationID: doomed.id, at: 2_000)

            // A second connection sees the committed state, so the tables can be counted directly.
            let database = try Database(.file(path: path))
            for table in ["registrations", "chats", "sightings", "calls", "retries"] {
                let rows = try database.queryOne("SELECT count(*) AS n FROM \(table)")
                #expect(try rows.decode("n", \.int64Value) == 0, "\(table)")
            }
        }
    }

    /// Work in flight for a removed registration (a held window, a push's outcome) names it by id, so
    /// a new registration must never be handed that id.
    @Test(arguments: StoreKind.allCases)
    func removedRegistrationIDsAreNeverReused(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let removed = try await registered(store, token: "old")
            try await store.retire(registrationID: removed.id, at: 2_000)
            let fresh = try await registered(store, token: "new")
            #expect(fresh.id != removed.id)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeRegistrationsOfAnAccountReturnsWhatItRemoved(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let phone = try await store.register(request(token: "phone"), freshCollapseKey: collapseKeyA, now: 1)
            let tablet = try await store.register(request(token: "tablet"), freshCollapseKey: collapseKeyA, now: 2)
            let otherAccount = try await store.register(
                request(token: "bob", account: "bob@example.org"),
                freshCollapseKey: collapseKeyA, now: 3)
            let otherDomain = try await store.register(
                request(domain: "other.example", token: "elsewhere"),
                freshCollapseKey: collapseKeyA, now: 4)

            let one = try await store.removeRegistrations(
                domain: "example.org", account: "alice@example.org",
                token: "tablet")
            #expect(one == [tablet])
            #expect(try await store.registration(id: tablet.id) == nil)
            #expect(try await store.registration(id: phone.id) == phone)

            let unknown = try await store.removeRegistrations(
                domain: "example.org", account: "alice@example.org",
                token: "tablet")
            #expect(unknown.isEmpty)

            let all = try await store.removeRegistrations(
                domain: "example.org", account: "alice@example.org",
                token: nil)
            #expect(all == [phone])
            #expect(
                try await store.registrations(matching: RegistrationFilter(), limit: 10, offset: 0)
                    .map(\.id) == [otherAccount.id, otherDomain.id])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeRegistrationsWithoutTokenRemovesEveryOneOfTheAccount(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let phone = try await registered(store, token: "phone")
            let tablet = try await registered(store, token: "tablet")
            let removed = try await store.removeRegistrations(
                domain: "example.org", account: "alice@example.org",
                token: nil)
            #expect(Set(removed.map(\.id)) == [phone.id, tablet.id])
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func recordPushCountsSuccessesAndErrorsSeparately(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let registration = try await registered(store)
            try await store.recordPush(registrationID: registration.id, at: 2_000, error: nil)
            try await store.recordPush(registrationID: registration.id, at: 3_000, error: nil)
            var stored = try #require(try await store.registration(id: registration.id))
            #expect(stored.pushCount == 2 && stored.lastPushAt == 3_000)
            #expect(stored.errorCount == 0 && stored.lastError == nil && stored.lastErrorAt == nil)

            try await store.recordPush(registrationID: registration.id, at: 4_000, error: "wait/timeout")
            try await store.recordPush(registrationID: registration.id, at: 5_000, error: "wait/resource-constraint")
            stored = try #require(try await store.registration(id: registration.id))
            #expect(stored.errorCount == 2)
            #expect(stored.lastError == "wait/resource-constraint" && stored.lastErrorAt == 5_000)
            #expect(stored.pushCount == 2 && stored.lastPushAt == 3_000)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func recordWakeKeepsTheLatestWakeAndRefusesOneInsideTheInterval(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let registration = try await registered(store)
            #expect(try await store.recordWake(registrationID: registration.id, at: 2_000, unlessSince: -58_000))
            #expect(!(try await store.recordWake(registrationID: registration.id, at: 61_999, unlessSince: 1_999)))
            #expect(try await store.recordWake(registrationID: registration.id, at: 62_000, unlessSince: 2_000))
            let stored = try #require(try await store.registration(id: registration.id))
            #expect(stored.lastWakeAt == 62_000)
            #expect(stored.pushCount == 0 && stored.lastPushAt == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func anAccountPastItsCapLosesItsLeastRecentlyUsedRegistration(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.registrationsPerAccount = 2 }) { store async throws in
            let bobs = try await registered(store, token: "t0", account: "bob@example.org")
            let old = try await store.register(request(token: "t1"), freshCollapseKey: collapseKeyA, now: 1_000)
            let idle = try await store.register(request(token: "t2"), freshCollapseKey: collapseKeyA, now: 2_000)
            try await store.recordPush(registrationID: old.id, at: 3_000, error: nil)
            let new = try await store.register(request(token: "t3"), freshCollapseKey: collapseKeyA, now: 4_000)
            #expect(try await store.registration(id: idle.id) == nil)
            #expect(try await store.registration(id: old.id) != nil)
            #expect(try await store.registration(id: new.id) != nil)
            #expect(try await store.registration(id: bobs.id) == bobs)

            // Adopting a stock-era registration counts too.
            let stock = try await store.register(
                request(token: "t4", account: nil), freshCollapseKey: collapseKeyA,
                now: 5_000)
            let adopted = try await store.register(request(token: "t4"), freshCollapseKey: collapseKeyA, now: 6_000)
            #expect(adopted.id == stock.id)
            #expect(try await store.countRegistrations(matching: RegistrationFilter(account: "alice@example.org")) == 2)
            #expect(try await store.registration(id: old.id) == nil)
        }
    }

    /// Issue 20, item 7: apps register each device once, so one account keeps a handful, not 32.
    @Test func anAccountKeepsAHandfulOfRegistrations() {
        #expect(StoreLimits().registrationsPerAccount == 8)
    }

    /// Issue 20, item 7: a registration not registered, renewed or pushed since the cutoff is removed
    /// with what is kept for it; one renewed (registered again unchanged) or pushed since stays.
    @Test(arguments: StoreKind.allCases)
    func aRegistrationUnusedSinceTheCutoffExpiresAndOneRenewedOrPushedStays(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let day = StoreLimits.renewalResolution
            let idle = try await store.register(request(token: "t1"), freshCollapseKey: collapseKeyA, now: 0)
            let renewed = try await store.register(request(token: "t2"), freshCollapseKey: collapseKeyA, now: 0)
            let pushed = try await store.register(
                request(token: "t3", account: nil), freshCollapseKey: collapseKeyA, now: 0)
            try await store.enqueueRetry(retry(idle.id, nextAt: 100))
            // Registered again unchanged within a day: nothing is written, so it still dates from 0.
            _ = try await store.register(request(token: "t1"), freshCollapseKey: collapseKeyA, now: day - 1)
            let again = try await store.register(request(token: "t2"), freshCollapseKey: collapseKeyA, now: 2 * day)
            #expect(again.id == renewed.id)
            #expect(again.lastUsedAt == 2 * day)
            try await store.recordPush(registrationID: pushed.id, at: 3 * day, error: nil)

            #expect(try await store.expireRegistrations(unusedBefore: day, limit: 100) == 1)
            #expect(try await store.registration(id: idle.id) == nil)
            #expect(try await store.nextRetry() == nil, "its stored pushes went with it")
            #expect(try await store.registration(id: renewed.id)?.lastUsedAt == 2 * day)
            #expect(try await store.registration(id: pushed.id)?.lastUsedAt == 3 * day)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 2)

            #expect(try await store.expireRegistrations(unusedBefore: 4 * day, limit: 1) == 1, "a bounded batch")
            #expect(try await store.expireRegistrations(unusedBefore: 4 * day, limit: 1) == 1)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 0)
            #expect(try await store.countRegistrationsWithoutAccount() == 0)
        }
    }

    /// Issue 20, item 7: registrations with no account (stock mode) have a cap of their own, so they
    /// cannot fill the store for the bridged accounts.
    @Test(arguments: StoreKind.allCases)
    func registrationsWithNoAccountHaveACapOfTheirOwn(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.registrationsWithoutAccount = 2 }) { store async throws in
            let first = try await registered(store, token: "t1", account: nil)
            _ = try await registered(store, token: "t2", account: nil)
            #expect(try await store.countRegistrationsWithoutAccount() == 2)
            await #expect(
                throws: StoreCapacityError(collection: "registrations without an account", limit: 2)
            ) {
                try await registered(store, token: "t3", account: nil)
            }
            _ = try await registered(store, token: "t3", account: "bob@example.org")
            // An account adopts the first: one place is free again.
            let adopted = try await registered(store, token: "t1", account: "alice@example.org")
            #expect(adopted.id == first.id)
            #expect(try await store.countRegistrationsWithoutAccount() == 1)
            _ = try await registered(store, token: "t4", account: nil)
            #expect(try await store.countRegistrationsWithoutAccount() == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aNewRegistrationPastTheCapInAllIsRefused(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.registrations = 2 }) { store async throws in
            let first = try await registered(store, token: "t1")
            _ = try await registered(store, token: "t2", account: "bob@example.org")
            await #expect(throws: StoreCapacityError(collection: "registrations", limit: 2)) {
                try await registered(store, token: "t3", account: "carol@example.org")
            }
            // Known registrations still update.
            let rekeyed = try await store.register(
                request(token: "t1", deviceKey: [9]), freshCollapseKey: collapseKeyB,
                now: 2_000)
            #expect(rekeyed.id == first.id)
            try await store.retire(registrationID: first.id, at: 3_000)
            _ = try await registered(store, token: "t3", account: "carol@example.org")
        }
    }

    /// A row damaged in the file (written with raw SQL, as a bad restore or a hand edit would) is an error
    /// that names the column and the statement, never a value read as a default.
    @Test(arguments: [
        ("UPDATE registrations SET calls = 'sometimes'", "column calls holds a TEXT that is no value this build knows"),
        ("UPDATE registrations SET device_key = 'text'", "column device_key holds an unexpected TEXT"),
        ("UPDATE registrations SET wants_reads = 'yes'", "column wants_reads holds an unexpected TEXT"),
        ("UPDATE registrations SET created_at = 1.5", "column created_at holds an unexpected REAL"),
        ("ALTER TABLE registrations DROP COLUMN last_wake_at", "no column last_wake_at"),
    ])
    func aDamagedRegistrationNamesTheColumnAndTheStatement(damage: String, problem: String) async throws {
        try await withTemporaryDatabasePath { path in
            let alice = try await registered(SQLitePushStore(.file(path: path)))
            try Database(.file(path: path)).executeScript(damage)
            let error = await #expect(throws: RowDecodingError.self) {
                try await SQLitePushStore(.file(path: path)).registration(id: alice.id)
            }
            #expect(error?.description == "\(problem) in \"SELECT * FROM registrations WHERE id = ?\"")
        }
    }

    /// The totals the caps check are kept in `sizes`; one that is gone must not read as zero, which
    /// would let the table grow past its cap.
    @Test func aMissingSizeIsAnErrorNotAnEmptyTable() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            _ = try await registered(store)
            try Database(.file(path: path)).executeScript("DELETE FROM sizes WHERE name = 'registrations'")
            let error = await #expect(throws: RowDecodingError.self) {
                try await registered(store, token: "token-2", account: "bob@example.org")
            }
            #expect(error?.description == #"no row from "SELECT count FROM sizes WHERE name = ?""#)
        }
    }
}

extension PushStoreTests.Registrations {
    /// docs/wire-contract.md (Publishes): a registration is (domain, account, token); accounts that share a token share
    /// nothing.
    @Suite struct SharedToken {
        private let alice = "alice@example.org"
        private let bob = "bob@example.org"
    }
}

extension PushStoreTests.Registrations.SharedToken {
    @Test(arguments: StoreKind.allCases)
    func twoAccountsEnablingOneTokenKeepTwoRegistrations(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await store.register(
                request(account: alice, deviceKey: [1]),
                freshCollapseKey: collapseKeyA, now: 1_000)
            let bob = try await store.register(
                request(account: bob, deviceKey: [2]),
                freshCollapseKey: collapseKeyB, now: 2_000)
            #expect(alice.id != bob.id)
            #expect(try await store.registration(id: alice.id) == alice)
            #expect(try await store.registration(id: bob.id) == bob)
            #expect(try await store.registration(domain: "example.org", token: "token-1", account: self.alice) == alice)
            #expect(try await store.registration(domain: "example.org", token: "token-1", account: self.bob) == bob)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func oneAccountsNewKeyLeavesTheOthersKeyAndCollapseKey(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await store.register(
                request(account: alice, deviceKey: [1]),
                freshCollapseKey: collapseKeyA, now: 1_000)
            _ = try await store.register(
                request(account: bob, deviceKey: [2]), freshCollapseKey: collapseKeyA, now: 1_000)
            let rekeyed = try await store.register(
                request(account: bob, deviceKey: [3]), freshCollapseKey: collapseKeyB,
                now: 2_000)
            #expect(rekeyed.deviceKey == [3] && rekeyed.collapseKey == collapseKeyB)
            #expect(try await store.registration(id: alice.id) == alice)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func unregisteringOneAccountLeavesTheOther(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store, account: alice)
            _ = try await registered(store, account: bob)
            let removed = try await store.removeRegistrations(domain: "example.org", account: bob, token: "token-1")
            #expect(removed.map(\.account) == [bob])
            #expect(try await store.registration(id: alice.id) == alice)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aNamedAccountAdoptsTheTokensStockEraRegistration(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let stock = try await registered(store, account: nil)
            try await openWindow(store, registrationID: stock.id, chat: "carol@example.org", windowEnd: 5_000)
            #expect(try await store.registration(domain: "example.org", token: "token-1", account: alice) == stock)
            let adopted = try await registered(store, account: alice)
            #expect(adopted.id == stock.id)
            #expect(adopted.account == alice)
            #expect(try await store.chats(registrationID: stock.id).count == 1)
            // Once adopted it is Alice's: Bob gets one of his own.
            let bobs = try await registered(store, account: bob)
            #expect(bobs.id != stock.id)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 2)
        }
    }

    /// A stock publish names no account: the registration with none, else the only one, else the one
    /// enabled or changed last.
    @Test(arguments: StoreKind.allCases)
    func aStockPublishChoosesTheUnnamedThenTheOnlyThenTheLatest(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await store.register(request(account: alice), freshCollapseKey: collapseKeyA, now: 1_000)
            #expect(try await store.registration(domain: "example.org", token: "token-1", account: nil) == alice)
            let bob = try await store.register(request(account: bob), freshCollapseKey: collapseKeyA, now: 2_000)
            #expect(try await store.registration(domain: "example.org", token: "token-1", account: nil) == bob)
            // A stock publish with unchanged options changes nothing of Bob's.
            #expect(try await store.register(request(account: nil), freshCollapseKey: collapseKeyB, now: 3_000) == bob)
            let unnamed = try await store.register(
                request(domain: "other.example", account: nil),
                freshCollapseKey: collapseKeyA, now: 4_000)
            #expect(try await store.registration(domain: "other.example", token: "token-1", account: nil) == unnamed)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 3)
        }
    }

    /// Each account's stock publishes echo its own options: the device key tells whose registration it is,
    /// so neither rekeys the other's.
    @Test(arguments: StoreKind.allCases)
    func aStockPublishAmongSeveralAccountsTakesTheOneWithItsDeviceKey(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await store.register(
                request(account: alice, deviceKey: [1]), freshCollapseKey: collapseKeyA,
                now: 1_000)
            let bob = try await store.register(
                request(account: bob, deviceKey: [2]), freshCollapseKey: collapseKeyB,
                now: 2_000)
            #expect(
                try await store.register(
                    request(account: nil, deviceKey: [1]), freshCollapseKey: collapseKeyB,
                    now: 3_000) == alice)
            #expect(
                try await store.register(
                    request(account: nil, deviceKey: [2]), freshCollapseKey: collapseKeyA,
                    now: 4_000) == bob)
        }
    }
}

extension PushStoreTests.Registrations {
    /// /metrics shows each domain's registrations from totals the store keeps as rows come and go.
    @Test(arguments: StoreKind.allCases)
    func registrationsByDomainFollowRegistrationsMadeAndRemoved(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.registrationsByDomain().isEmpty)
            _ = try await store.register(request(token: "t1"), freshCollapseKey: collapseKeyA, now: 1)
            _ = try await store.register(request(token: "t2"), freshCollapseKey: collapseKeyA, now: 1)
            _ = try await store.register(
                request(domain: "other.org", token: "t3", account: "bob@other.org"), freshCollapseKey: collapseKeyA,
                now: 1)
            // A refresh of a registration is no new one.
            _ = try await store.register(request(token: "t1"), freshCollapseKey: collapseKeyA, now: 2)
            #expect(try await store.registrationsByDomain() == ["example.org": 2, "other.org": 1])
            _ = try await store.removeRegistrations(domain: "other.org", account: "bob@other.org", token: nil)
            #expect(try await store.registrationsByDomain() == ["example.org": 2, "other.org": 0])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func accountsWithRegistrationsArePagedInOrderOncePerAccountForOneDomain(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let registrations = [
                ("example.org", "carol@example.org", "t1"), ("example.org", "alice@example.org", "t2"),
                ("example.org", "alice@example.org", "t3"), ("example.org", "bob@example.org", "t4"),
                ("other.org", "dave@other.org", "t5"), ("example.org", nil, "t6"),
            ]
            for (domain, account, token) in registrations {
                _ = try await store.register(
                    request(domain: domain, token: token, account: account), freshCollapseKey: collapseKeyA, now: 1)
            }
            #expect(
                try await store.accountsWithRegistrations(domain: "example.org", after: nil, limit: 10) == [
                    "alice@example.org", "bob@example.org", "carol@example.org",
                ])
            #expect(
                try await store.accountsWithRegistrations(domain: "example.org", after: nil, limit: 2) == [
                    "alice@example.org", "bob@example.org",
                ])
            #expect(
                try await store.accountsWithRegistrations(domain: "example.org", after: "bob@example.org", limit: 2)
                    == ["carol@example.org"])
            #expect(try await store.accountsWithRegistrations(domain: "nowhere.org", after: nil, limit: 2).isEmpty)
        }
    }
}

extension PushStoreTests.Registrations {
    /// The longest registration the component takes, a 2,048-byte token (RegistrationOptions' limit) for
    /// an account of 2,047 bytes (a localpart and a domain of 1,023 each, RFC 7622), is stored, found,
    /// updated, retired, exhumed and buried on every engine: on PostgreSQL it passed the 2,704 bytes a
    /// btree entry holds. Random characters, as a device's token, which compression cannot shrink.
    @Test(arguments: StoreKind.allCases)
    func theLongestTokenForTheLongestAccountIsStoredAndBuried(kind: StoreKind) async throws {
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let token = String((0..<2048).map { _ in characters.randomElement()! })
        let account =
            String((0..<1023).map { _ in characters.randomElement()! }).lowercased() + "@"
            + String(repeating: "d", count: 1019) + ".org"
        try await withStore(kind) { store in
            let first = try await registered(store, token: token, account: account)
            #expect(try await registered(store, token: token, account: account).id == first.id)
            let other = try await registered(store, token: token, account: "bob@example.org")
            #expect(other.id != first.id)
            let found = try await store.registration(domain: "example.org", token: token, account: account)
            #expect(found?.id == first.id)

            try await store.retire(registrationID: first.id, at: 2_000)
            #expect(try await store.isBuried(token: token, pushModule: "fcm", account: account, since: 2_000))
            #expect(try await !store.isBuried(token: token, pushModule: "fcm", account: "bob@example.org", since: 0))
            try await store.exhume(token: token, pushModule: "fcm", account: account)
            #expect(try await !store.isBuried(token: token, pushModule: "fcm", account: account, since: 0))

            #expect(try await store.buryDeadToken(token, pushModule: "fcm", at: 3_000) == 1)
            #expect(try await store.isBuried(token: token, pushModule: "fcm", account: nil, since: 3_000))
            #expect(
                try await store.registration(domain: "example.org", token: token, account: "bob@example.org") == nil)
        }
    }
}
