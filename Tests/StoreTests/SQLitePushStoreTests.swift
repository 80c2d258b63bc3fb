import Foundation
import SQLite
import SQLiteTesting
import Testing

@testable import Store

/// Where a test's store lives: an in-memory database and a WAL file must behave the same.
enum StoreKind: String, CaseIterable, Sendable {
    case memory
    case file
}

/// Runs `body` with a fresh store of `kind`; a file store's files are removed afterwards.
private func withStore<T>(_ kind: StoreKind, _ body: (SQLitePushStore) async throws -> T) async throws -> T {
    switch kind {
    case .memory:
        return try await body(SQLitePushStore(.memory))
    case .file:
        return try await withTemporaryDatabasePath { path in try await body(SQLitePushStore(.file(path: path))) }
    }
}

private func request(domain: String = "example.org", token: String = "token-1", pushModule: String = "fcm",
                     account: String? = "alice@example.org", deviceKey: [UInt8] = [1, 2, 3],
                     calls: CallsMode = .none, wantsReads: Bool = false) -> RegistrationRequest {
    RegistrationRequest(domain: domain, token: token, pushModule: pushModule, account: account,
                        deviceKey: deviceKey, calls: calls, wantsReads: wantsReads)
}

private let collapseKeyA: [UInt8] = Array(repeating: 0xA1, count: 32)
private let collapseKeyB: [UInt8] = Array(repeating: 0xB2, count: 32)

/// A registration to hang per-registration state on.
private func registered(_ store: SQLitePushStore, token: String = "token-1",
                        account: String? = "alice@example.org") async throws -> Registration {
    try await store.register(request(token: token, account: account), freshCollapseKey: collapseKeyA, now: 1_000)
}

/// A chat state with an open window ending at `windowEnd`.
private func openWindow(_ store: SQLitePushStore, registrationID: Int64, chat: String, windowEnd: Timestamp?)
    async throws {
    try await store.updateChat(registrationID: registrationID, chat: chat) { state in
        state = ChatState(registrationID: registrationID, chat: chat, count: 1, windowEndsAt: windowEnd)
    }
}

private func retry(_ registrationID: Int64, nextAt: Timestamp, kind: String = "message") -> RetryItem {
    RetryItem(registrationID: registrationID, summary: #"{"kind":"\#(kind)"}"#, kind: kind,
              collapseChat: kind == "message" ? "bob@example.org" : nil, attempts: 1, nextAt: nextAt,
              deadline: nextAt + 60_000)
}

@Suite struct SQLitePushStorePruningTests {
    @Test(arguments: StoreKind.allCases)
    func quietChatsAreForgottenButOpenWindowsAndHeldNoticesAreKept(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let registration = try await registered(store)
            let id = registration.id
            try await store.updateChat(registrationID: id, chat: "quiet@example.org") { state in
                state = ChatState(registrationID: id, chat: "quiet@example.org", count: 3, lastMessageAt: 1_000)
            }
            try await store.updateChat(registrationID: id, chat: "recent@example.org") { state in
                state = ChatState(registrationID: id, chat: "recent@example.org", count: 1, lastMessageAt: 9_000)
            }
            try await openWindow(store, registrationID: id, chat: "open@example.org", windowEnd: 2_000)
            try await store.updateChat(registrationID: id, chat: "held@example.org") { state in
                state = ChatState(registrationID: id, chat: "held@example.org", count: 2, lastMessageAt: 1_000,
                                  held: HeldNotice(from: "h@example.org", id: nil, groupchat: false, mention: false,
                                                   at: 1_000))
            }
            try await store.prune(tombstonesBefore: 0, sightingsBefore: 0, callsBefore: 0, unknownAnswersBefore: 0,
                                  quietChatsBefore: 5_000)
            let left = try await store.chats(registrationID: id).map(\.chat)
            #expect(left == ["held@example.org", "open@example.org", "recent@example.org"])
        }
    }
}

@Suite struct SQLitePushStoreTests {
    // MARK: Registrations

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
            #expect(try await store.registration(domain: new.domain, token: new.token, account: new.account)
                == registration)
            #expect(try await store.registration(id: registration.id) == registration)
        }
    }

    @Test(arguments: CallsMode.allCases)
    func everyCallsModeRoundTrips(calls: CallsMode) async throws {
        let store = try SQLitePushStore(.memory)
        let registration = try await store.register(request(calls: calls), freshCollapseKey: collapseKeyA, now: 1)
        #expect(try await store.registration(id: registration.id)?.calls == calls)
    }

    @Test(arguments: StoreKind.allCases)
    func reregisteringUpdatesInPlaceKeepingIDAndCreationTime(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let first = try await store.register(request(), freshCollapseKey: collapseKeyA, now: 1_000)
            try await store.recordPush(registrationID: first.id, at: 1_500, error: nil)
            let changed = request(pushModule: "apns-voip", account: "alice@example.org", calls: .only,
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
            let alice = try await store.register(request(account: "alice@example.org"), freshCollapseKey: collapseKeyA,
                                                 now: 1_000)
            let anonymous = try await store.register(request(account: nil, calls: .also),
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
            let again = try await store.register(request(deviceKey: [7, 7]), freshCollapseKey: collapseKeyB,
                                                 now: 2_000)
            #expect(again.collapseKey == collapseKeyA)
            #expect(try await store.registration(id: again.id)?.collapseKey == collapseKeyA)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func changedDeviceKeyTakesTheFreshCollapseKey(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            _ = try await store.register(request(deviceKey: [7, 7]), freshCollapseKey: collapseKeyA, now: 1_000)
            let rekeyed = try await store.register(request(deviceKey: [8, 8]), freshCollapseKey: collapseKeyB,
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
            let one = try await store.register(request(domain: "one.example", token: "shared"),
                                               freshCollapseKey: collapseKeyA, now: 1_000)
            let two = try await store.register(request(domain: "two.example", token: "shared"),
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
                let new = request(domain: spec.domain, token: "token-\(index)", pushModule: spec.module,
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
            #expect(try await listed(RegistrationFilter(account: "alice@a.example", domain: "a.example",
                                                        pushModule: "fcm")) == [ids[0]])
            #expect(try await listed(RegistrationFilter(account: "nobody@a.example")).isEmpty)

            #expect(try await listed(RegistrationFilter(), limit: 2) == [ids[0], ids[1]])
            #expect(try await listed(RegistrationFilter(), limit: 2, offset: 2) == [ids[2], ids[3]])
            #expect(try await listed(RegistrationFilter(), limit: 2, offset: 4) == [ids[4]])
            #expect(try await listed(RegistrationFilter(), limit: 2, offset: 5).isEmpty)
            #expect(try await listed(RegistrationFilter(pushModule: "fcm"), limit: 2, offset: 1) == [ids[2], ids[3]])

            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 5)
            #expect(try await store.countRegistrations(matching: RegistrationFilter(account: "alice@a.example")) == 3)
            #expect(try await store.countRegistrations(matching: RegistrationFilter(domain: "a.example",
                                                                                    pushModule: "fcm")) == 2)
            #expect(try await store.countRegistrations(matching: RegistrationFilter(domain: "c.example")) == 0)
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
                try await store.rememberCall(PendingCall(registrationID: registration.id, sid: "s1",
                                                         chat: "bob@example.org", caller: "bob@example.org",
                                                         media: ["audio"], at: 1_000))
                try await store.enqueueRetry(retry(registration.id, nextAt: 2_000))
            }

            try await store.retire(registrationID: doomed.id, at: 2_000)

            #expect(try await store.registration(id: doomed.id) == nil)
            #expect(try await store.chats(registrationID: doomed.id).isEmpty)
            #expect(try await store.takeCall(registrationID: doomed.id, sid: "s1", chat: nil) == nil)
            #expect(try await store.dueWindows(at: 10_000, limit: 10).map(\.registrationID) == [kept.id])
            #expect(try await store.claimDueRetries(at: 10_000, limit: 10, leaseUntil: 20_000).map(\.registrationID)
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
            try await store.rememberCall(PendingCall(registrationID: doomed.id, sid: "s1", chat: "c", caller: "c",
                                                     media: [], at: 1_000))
            try await store.enqueueRetry(retry(doomed.id, nextAt: 2_000))

            try await store.retire(registrationID: doomed.id, at: 2_000)

            // A second connection sees the committed state, so the tables can be counted directly.
            let database = try Database(.file(path: path))
            for table in ["registrations", "chats", "sightings", "calls", "retries"] {
                #expect(try database.queryOne("SELECT count(*) AS n FROM \(table)").decode("n", \.int64Value) == 0, "\(table)")
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
            let otherAccount = try await store.register(request(token: "bob", account: "bob@example.org"),
                                                        freshCollapseKey: collapseKeyA, now: 3)
            let otherDomain = try await store.register(request(domain: "other.example", token: "elsewhere"),
                                                       freshCollapseKey: collapseKeyA, now: 4)

            let one = try await store.removeRegistrations(domain: "example.org", account: "alice@example.org",
                                                          token: "tablet")
            #expect(one == [tablet])
            #expect(try await store.registration(id: tablet.id) == nil)
            #expect(try await store.registration(id: phone.id) == phone)

            let unknown = try await store.removeRegistrations(domain: "example.org", account: "alice@example.org",
                                                              token: "tablet")
            #expect(unknown.isEmpty)

            let all = try await store.removeRegistrations(domain: "example.org", account: "alice@example.org",
                                                          token: nil)
            #expect(all == [phone])
            #expect(try await store.registrations(matching: RegistrationFilter(), limit: 10, offset: 0)
                .map(\.id) == [otherAccount.id, otherDomain.id])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func removeRegistrationsWithoutTokenRemovesEveryOneOfTheAccount(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let phone = try await registered(store, token: "phone")
            let tablet = try await registered(store, token: "tablet")
            let removed = try await store.removeRegistrations(domain: "example.org", account: "alice@example.org",
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

    // MARK: Tombstones

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

    @Test(arguments: StoreKind.allCases)
    func pruneForgetsTombstonesOlderThanTheCutoff(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.buryDeadToken("old", pushModule: "fcm", at: 1_000)
            try await store.buryDeadToken("young", pushModule: "fcm", at: 3_000)
            try await store.prune(tombstonesBefore: 2_000, sightingsBefore: 0, callsBefore: 0, unknownAnswersBefore: 0, quietChatsBefore: 0)
            #expect(try await !store.isBuried(token: "old", pushModule: "fcm", account: nil, since: 0))
            #expect(try await store.isBuried(token: "young", pushModule: "fcm", account: nil, since: 0))
        }
    }

    // MARK: Chats

    @Test(arguments: StoreKind.allCases)
    func updateChatCreatesModifiesAndDeletes(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let chat = "bob@example.org"

            let sawNothing = try await store.updateChat(registrationID: id, chat: chat) { state in
                defer { state = ChatState(registrationID: id, chat: chat, count: 1, lastMessageAt: 1_000,
                                          windowEndsAt: 11_000, windowMilliseconds: 10_000) }
                return state == nil
            }
            #expect(sawNothing)
            let created = ChatState(registrationID: id, chat: chat, count: 1, lastMessageAt: 1_000,
                                    windowEndsAt: 11_000, windowMilliseconds: 10_000)
            #expect(try await store.chats(registrationID: id) == [created])

            let countBefore = try await store.updateChat(registrationID: id, chat: chat) { state in
                let count = state?.count
                state?.count += 1
                state?.noticedSinceRead = true
                state?.lastReadPushAt = 9_000
                state?.windowMilliseconds = 30_000
                return count
            }
            #expect(countBefore == 1)
            var modified = created
            modified.count = 2
            modified.noticedSinceRead = true
            modified.lastReadPushAt = 9_000
            modified.windowMilliseconds = 30_000
            #expect(try await store.chats(registrationID: id) == [modified])

            let deleted = try await store.updateChat(registrationID: id, chat: chat) { state in
                state = nil
                return "gone"
            }
            #expect(deleted == "gone")
            #expect(try await store.chats(registrationID: id).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func updateChatThatLeavesNothingStoresNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let seen = try await store.updateChat(registrationID: id, chat: "bob@example.org") { state in
                state?.count ?? -1
            }
            #expect(seen == -1)
            #expect(try await store.chats(registrationID: id).isEmpty)
        }
    }

    @Test(arguments: [
        HeldNotice(from: "bob@example.org", id: "msg-1", groupchat: false, mention: false, at: 1_234),
        HeldNotice(from: "room@muc.example.org/carol", id: nil, groupchat: true, mention: true, at: 5_678),
    ])
    func heldNoticeRoundTrips(notice: HeldNotice) async throws {
        try await withStore(.file) { store in
            let id = try await registered(store).id
            try await store.updateChat(registrationID: id, chat: "c") { state in
                state = ChatState(registrationID: id, chat: "c", windowEndsAt: 10_000, held: notice)
            }
            #expect(try await store.chats(registrationID: id).first?.held == notice)

            try await store.updateChat(registrationID: id, chat: "c") { state in state?.held = nil }
            #expect(try await store.chats(registrationID: id).first?.held == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func chatsAreKeptPerRegistrationAndListedByName(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store, token: "alice")
            let other = try await registered(store, token: "other")
            for chat in ["zed@example.org", "amy@example.org"] {
                try await openWindow(store, registrationID: alice.id, chat: chat, windowEnd: nil)
            }
            try await openWindow(store, registrationID: other.id, chat: "amy@example.org", windowEnd: nil)
            try await store.updateChat(registrationID: other.id, chat: "amy@example.org") { state in
                state?.count = 7
            }
            #expect(try await store.chats(registrationID: alice.id).map(\.chat) == ["amy@example.org", "zed@example.org"])
            #expect(try await store.chats(registrationID: alice.id).map(\.count) == [1, 1])
            #expect(try await store.chats(registrationID: other.id).map(\.count) == [7])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func updateChatForAnUnknownRegistrationFails(kind: StoreKind) async throws {
        try await withStore(kind) { (store: SQLitePushStore) async throws in
            await #expect(throws: SQLiteError.self) {
                try await openWindow(store, registrationID: 42, chat: "c", windowEnd: 1_000)
            }
            #expect(try await store.nextWindowEnd() == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentUpdatesOfOneChatLoseNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        try await store.updateChat(registrationID: id, chat: "c") { state in
                            if state == nil {
                                state = ChatState(registrationID: id, chat: "c")
                            }
                            state?.count += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.chats(registrationID: id).first?.count == 100)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func dueWindowsAreTheEndedOnesSoonestFirst(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let ends: [String: Timestamp?] = ["c300": 300, "c100": 100, "c200": 200, "c900": 900, "closed": nil]
            for (chat, end) in ends {
                try await openWindow(store, registrationID: id, chat: chat, windowEnd: end)
            }
            #expect(try await store.dueWindows(at: 50, limit: 10).isEmpty)
            #expect(try await store.dueWindows(at: 250, limit: 10).map(\.chat) == ["c100", "c200"])
            #expect(try await store.dueWindows(at: 300, limit: 10).map(\.chat) == ["c100", "c200", "c300"])
            #expect(try await store.dueWindows(at: 1_000, limit: 2).map(\.chat) == ["c100", "c200"])
            #expect(try await store.dueWindows(at: 1_000, limit: 10).map(\.windowEndsAt) == [100, 200, 300, 900])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func nextWindowEndIsTheEarliestOpenWindow(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.nextWindowEnd() == nil)
            let id = try await registered(store).id
            try await openWindow(store, registrationID: id, chat: "closed", windowEnd: nil)
            #expect(try await store.nextWindowEnd() == nil)
            try await openWindow(store, registrationID: id, chat: "late", windowEnd: 9_000)
            try await openWindow(store, registrationID: id, chat: "soon", windowEnd: 4_000)
            #expect(try await store.nextWindowEnd() == 4_000)
            try await store.updateChat(registrationID: id, chat: "soon") { state in state?.windowEndsAt = nil }
            #expect(try await store.nextWindowEnd() == 9_000)
        }
    }

    // MARK: Dedupe

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
    func pruneForgetsSightingsOlderThanTheCutoff(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            _ = try await store.firstSighting(registrationID: id, key: "old", at: 1_000, since: 0)
            _ = try await store.firstSighting(registrationID: id, key: "young", at: 3_000, since: 0)
            try await store.prune(tombstonesBefore: 0, sightingsBefore: 2_000, callsBefore: 0, unknownAnswersBefore: 0, quietChatsBefore: 0)
            #expect(try await store.firstSighting(registrationID: id, key: "old", at: 4_000, since: 0))
            #expect(try await !store.firstSighting(registrationID: id, key: "young", at: 4_000, since: 0))
        }
    }

    // MARK: Calls

    @Test(arguments: [[], ["audio"], ["audio", "video"]])
    func takeCallReturnsTheRememberedCallOnce(media: [String]) async throws {
        try await withStore(.file) { store in
            let id = try await registered(store).id
            let call = PendingCall(registrationID: id, sid: "sid-1", chat: "bob@example.org",
                                   caller: "bob@example.org/phone", media: media, at: 1_000)
            try await store.rememberCall(call)
            #expect(try await store.takeCall(registrationID: id, sid: "sid-1", chat: nil) == call)
            #expect(try await store.takeCall(registrationID: id, sid: "sid-1", chat: nil) == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func callsAreFoundOnlyByTheirRegistrationAndSid(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let one = try await registered(store, token: "one").id
            let two = try await registered(store, token: "two").id
            try await store.rememberCall(PendingCall(registrationID: one, sid: "s", chat: "c", caller: "c",
                                                     media: ["audio"], at: 1_000))
            #expect(try await store.takeCall(registrationID: two, sid: "s", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: one, sid: "other", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: one, sid: "s", chat: nil) != nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aCallTakenForAnotherChatStaysForItsOwn(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            try await store.rememberCall(PendingCall(registrationID: id, sid: "s", chat: "bob@example.org",
                                                     caller: "bob@example.org/phone", media: ["audio"], at: 1_000))
            #expect(try await store.takeCall(registrationID: id, sid: "s", chat: "mallory@example.org") == nil)
            #expect(try await store.takeCall(registrationID: id, sid: "s", chat: "bob@example.org")?.chat
                == "bob@example.org")
            #expect(try await store.takeCall(registrationID: id, sid: "s", chat: "bob@example.org") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruneForgetsCallsOlderThanTheCutoff(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            for (sid, at) in [("old", Timestamp(1_000)), ("young", 3_000)] {
                try await store.rememberCall(PendingCall(registrationID: id, sid: sid, chat: "c", caller: "c",
                                                         media: ["audio"], at: at))
            }
            try await store.prune(tombstonesBefore: 0, sightingsBefore: 0, callsBefore: 2_000, unknownAnswersBefore: 0, quietChatsBefore: 0)
            #expect(try await store.takeCall(registrationID: id, sid: "old", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: id, sid: "young", chat: nil)?.at == 3_000)
        }
    }

    // MARK: Retries

    /// Claims every due item with a lease far ahead; returns their ids.
    private func claimIDs(_ store: SQLitePushStore, at now: Timestamp, limit: Int = 10) async throws -> [Int64] {
        try await store.claimDueRetries(at: now, limit: limit, leaseUntil: 1_000_000).map(\.id)
    }

    @Test(arguments: StoreKind.allCases)
    func dueRetriesAreClaimedSoonestFirst(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            var ids: [Timestamp: Int64] = [:]
            for (nextAt, kind) in [(Timestamp(300), "message"), (100, "read"), (200, "read"), (900, "wake")] {
                ids[nextAt] = try await store.enqueueRetry(retry(id, nextAt: nextAt, kind: kind))
            }
            #expect(Set(ids.values).count == 4)
            #expect(try await claimIDs(store, at: 50).isEmpty)
            #expect(try await claimIDs(store, at: 250, limit: 1) == [ids[100]])
            #expect(try await claimIDs(store, at: 1_000) == [ids[200], ids[300], ids[900]])
        }
    }

    /// A call can only ring for a few seconds: due calls are claimed before anything else.
    @Test(arguments: StoreKind.allCases)
    func dueCallsAreClaimedFirstThenTheRestInTheOrderEnqueued(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            var ids: [String: Int64] = [:]
            for (nextAt, kind) in [(Timestamp(100), "wake"), (100, "read"), (150, "call"), (100, "message")] {
                ids[kind] = try await store.enqueueRetry(retry(id, nextAt: nextAt, kind: kind))
            }
            #expect(try await claimIDs(store, at: 200, limit: 2) == [ids["call"], ids["wake"]])
            #expect(try await claimIDs(store, at: 200) == [ids["read"], ids["message"]])
        }
    }

    /// A claimed item is leased: no other turn (or instance) takes it while it is in flight, and it comes
    /// due again when the lease ends, as after the death of the process that sent it.
    @Test(arguments: StoreKind.allCases)
    func aClaimedRetryIsLeasedUntilItsLeaseEnds(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let item = try await store.enqueueRetry(retry(id, nextAt: 100))
            let claimed = try await store.claimDueRetries(at: 100, limit: 10, leaseUntil: 30_100)
            #expect(claimed.map(\.id) == [item])
            #expect(claimed.map(\.nextAt) == [30_100])
            #expect(try await claimIDs(store, at: 30_099).isEmpty)
            #expect(try await store.nextRetry() == 30_100)
            #expect(try await claimIDs(store, at: 30_100) == [item])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRetryPastItsDeadlineIsNotClaimedButDeletedAndCountedByKind(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            // retry() gives each a deadline 60 s after its next time.
            let leased = try await store.enqueueRetry(retry(id, nextAt: 100))
            #expect(try await store.claimDueRetries(at: 100, limit: 1, leaseUntil: 90_000).map(\.id) == [leased])
            try await store.enqueueRetry(retry(id, nextAt: 100))
            try await store.enqueueRetry(retry(id, nextAt: 100, kind: "call"))
            let alive = try await store.enqueueRetry(retry(id, nextAt: 50_000))

            #expect(try await claimIDs(store, at: 85_000) == [alive])
            #expect(try await store.deleteExpiredRetries(at: 85_000) == ["message": 1, "call": 1])
            #expect(try await store.deleteExpiredRetries(at: 85_000) == [:])
            // The leased one was in flight until its lease ended: its answer could still have come.
            #expect(try await store.deleteExpiredRetries(at: 95_000) == ["message": 1])
            #expect(try await store.nextRetry() == 1_000_000)
        }
    }

    /// A held push is stored in the transaction that takes it from its window: both or neither.
    @Test(arguments: StoreKind.allCases)
    func updateChatAndEnqueueStoresTheChatAndTheItemTogether(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            try await openWindow(store, registrationID: id, chat: "c", windowEnd: 100)
            let (taken, item) = try await store.updateChatAndEnqueue(registrationID: id, chat: "c") { state in
                state?.windowEndsAt = nil
                return ("taken", retry(id, nextAt: 100))
            }
            #expect(taken == "taken")
            #expect(try await store.dueWindows(at: 1_000, limit: 10).isEmpty)
            #expect(try await claimIDs(store, at: 100) == [try #require(item?.id)])

            // The item cannot be stored (no such registration): the window is not taken either.
            try await openWindow(store, registrationID: id, chat: "d", windowEnd: 100)
            await #expect(throws: SQLiteError.self) {
                try await store.updateChatAndEnqueue(registrationID: id, chat: "d") { state in
                    state?.windowEndsAt = nil
                    return ((), retry(42, nextAt: 100))
                }
            }
            #expect(try await store.dueWindows(at: 1_000, limit: 10).map(\.chat) == ["d"])
        }
    }

    /// The answer is in: the push is counted and its stored item goes, together.
    @Test(arguments: StoreKind.allCases)
    func recordPushRemovingItsRetryDoesBoth(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let done = try #require(await store.enqueueRetry(retry(id, nextAt: 100)))
            let other = try await store.enqueueRetry(retry(id, nextAt: 100))
            try await store.recordPush(registrationID: id, at: 2_000, error: nil, removingRetry: done)
            #expect(try await store.registration(id: id)?.pushCount == 1)
            #expect(try await claimIDs(store, at: 100) == [other])
        }
    }

    /// A database of the first schema gains the outbox indexes and keeps its retries.
    @Test func aVersionOneDatabaseIsMigratedWithItsRetries() async throws {
        try await withTemporaryDatabasePath { path in
            let old = try Database(.file(path: path))
            try old.migrate(Array(SQLitePushStore.migrations.prefix(1)))
            let store = try SQLitePushStore(.file(path: path))
            let id = try await registered(store).id
            let item = try await store.enqueueRetry(retry(id, nextAt: 100, kind: "call"))
            #expect(try old.userVersion == SQLitePushStore.migrations.last?.version)
            #expect(try await claimIDs(store, at: 100) == [item])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func nextRetryIsTheEarliestOne(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.nextRetry() == nil)
            let id = try await registered(store).id
            try await store.enqueueRetry(retry(id, nextAt: 700))
            let soonest = try #require(await store.enqueueRetry(retry(id, nextAt: 400)))
            #expect(try await store.nextRetry() == 400)
            try await store.deleteRetry(id: soonest)
            #expect(try await store.nextRetry() == 700)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func updateRetryReschedulesIt(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            var item = retry(id, nextAt: 100)
            item.id = try #require(await store.enqueueRetry(item))
            item.attempts = 2
            item.nextAt = 5_000
            try await store.updateRetry(item)
            #expect(try await claimIDs(store, at: 4_999).isEmpty)
            #expect(try await store.claimDueRetries(at: 5_000, limit: 10, leaseUntil: 5_000) == [item])
            #expect(try await store.nextRetry() == 5_000)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deleteRetryRemovesOnlyThatOne(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let gone = try #require(await store.enqueueRetry(retry(id, nextAt: 100)))
            let kept = try #require(await store.enqueueRetry(retry(id, nextAt: 200)))
            try await store.deleteRetry(id: gone)
            #expect(try await claimIDs(store, at: 1_000) == [kept])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func retryForAnUnknownRegistrationFails(kind: StoreKind) async throws {
        try await withStore(kind) { (store: SQLitePushStore) async throws in
            await #expect(throws: SQLiteError.self) { try await store.enqueueRetry(retry(42, nextAt: 100)) }
            #expect(try await store.nextRetry() == nil)
        }
    }

    // MARK: Counters

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

    // MARK: Unknown nodes

    @Test(arguments: StoreKind.allCases)
    func unknownNodeAnswersAreRecordedUpToTheLimitSinceATime(kind: StoreKind) async throws {
        try await withStore(kind) { (store: SQLitePushStore) async throws in
            for at in [Timestamp(100), 200, 300] {
                #expect(try await store.recordUnknownNodeAnswer(at: at, since: 0, limit: 3))
            }
            #expect(try await !store.recordUnknownNodeAnswer(at: 400, since: 0, limit: 3))
            // Those before the window are forgotten, which makes room.
            #expect(try await store.recordUnknownNodeAnswer(at: 500, since: 150, limit: 3))
            #expect(try await !store.recordUnknownNodeAnswer(at: 600, since: 150, limit: 3))
        }
    }

    @Test func unknownNodeAnswersKeepNoMoreThanTheLimit() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            for at in Timestamp(0)..<20 {
                _ = try await store.recordUnknownNodeAnswer(at: at * 1_000, since: at * 1_000 - 5_000, limit: 3)
            }
            let database = try Database(.file(path: path))
            #expect(try database.queryOne("SELECT count(*) AS n FROM unknown_node_answers").decode("n", \.int64Value) == 3)
        }
    }

    // MARK: Policies

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

    // MARK: Persistence

    /// Everything a burst leaves behind, written through one store and checked through another.
    private struct Burst {
        var registration: Registration
        var chat: ChatState
        var retry: RetryItem
        var call: PendingCall

        init(writingTo store: SQLitePushStore) async throws {
            registration = try await store.register(request(calls: .also, wantsReads: true),
                                                    freshCollapseKey: collapseKeyA, now: 1_000)
            try await store.recordPush(registrationID: registration.id, at: 1_100, error: nil)
            registration.pushCount = 1
            registration.lastPushAt = 1_100
            let notice = HeldNotice(from: "bob@example.org", id: "m2", groupchat: false, mention: false, at: 1_200)
            chat = ChatState(registrationID: registration.id, chat: "bob@example.org", count: 2,
                             lastMessageAt: 1_200, windowEndsAt: 11_100, held: notice, noticedSinceRead: true)
            let state = chat
            try await store.updateChat(registrationID: registration.id, chat: state.chat) { $0 = state }
            retry = RetryItem(registrationID: registration.id, summary: #"{"count":2}"#, kind: "message",
                              collapseChat: "bob@example.org", attempts: 1, nextAt: 3_000, deadline: 121_100)
            retry.id = try #require(await store.enqueueRetry(retry))
            call = PendingCall(registrationID: registration.id, sid: "call-1", chat: "bob@example.org",
                               caller: "bob@example.org/phone", media: ["audio", "video"], at: 1_300)
            try await store.rememberCall(call)
            _ = try await store.firstSighting(registrationID: registration.id, key: "m2", at: 1_200, since: 0)
            try await store.buryDeadToken("dead", pushModule: "fcm", at: 1_400)
            try await store.increment(["pushed": 1])
            _ = try await store.recordUnknownNodeAnswer(at: 1_500, since: 0, limit: 5)
            try await store.setPolicy(account: "alice@example.org", json: #"{"window":10}"#)
        }

        func expectRecovered(by store: SQLitePushStore) async throws {
            #expect(try await store.registration(domain: registration.domain, token: registration.token,
                                                 account: registration.account) == registration)
            #expect(try await store.nextWindowEnd() == chat.windowEndsAt)
            #expect(try await store.dueWindows(at: 20_000, limit: 10) == [chat])
            #expect(try await store.nextRetry() == retry.nextAt)
            #expect(try await store.claimDueRetries(at: 20_000, limit: 10, leaseUntil: retry.nextAt) == [retry])
            #expect(try await store.takeCall(registrationID: registration.id, sid: call.sid, chat: nil) == call)
            #expect(try await !store.firstSighting(registrationID: registration.id, key: "m2", at: 2_000, since: 0))
            #expect(try await store.isBuried(token: "dead", pushModule: "fcm", account: nil, since: 0))
            #expect(try await store.counters() == ["pushed": 1])
            #expect(try await !store.recordUnknownNodeAnswer(at: 2_000, since: 0, limit: 1))
            #expect(try await store.policy(account: "alice@example.org") == #"{"window":10}"#)
        }
    }

    @Test func everythingSurvivesClosingAndReopeningTheFile() async throws {
        try await withTemporaryDatabasePath { path in
            var store: SQLitePushStore? = try SQLitePushStore(.file(path: path))
            let burst = try await Burst(writingTo: try #require(store))
            store = nil
            try await burst.expectRecovered(by: SQLitePushStore(.file(path: path)))
        }
    }

    /// A `kill -9` closes nothing and checkpoints nothing: what was committed must be readable by the
    /// next process from the file and its write-ahead log as they were left.
    @Test func everythingIsReadableFromTheFileWhileTheWriterIsStillOpen() async throws {
        try await withTemporaryDatabasePath { path in
            let writer = try SQLitePushStore(.file(path: path))
            let burst = try await Burst(writingTo: writer)
            try await burst.expectRecovered(by: SQLitePushStore(.file(path: path)))
            // The writer, still open, carries on beside the recovered reader.
            try await writer.increment(["pushed": 1])
            #expect(try await writer.counters() == ["pushed": 2])
        }
    }

    @Test func databaseFilesAreOwnerOnly() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            _ = try await registered(store)
            #expect(try permissions(path) == 0o600)
            #expect(try permissions(path + "-wal") == 0o600)
            #expect(try permissions(path + "-shm") == 0o600)
        }
    }
}

/// PROTOCOL.md §2.1: a registration is (domain, account, token); accounts that share a token share nothing.
@Suite struct SQLitePushStoreSharedTokenTests {
    private let alice = "alice@example.org"
    private let bob = "bob@example.org"

    @Test(arguments: StoreKind.allCases)
    func twoAccountsEnablingOneTokenKeepTwoRegistrations(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await store.register(request(account: alice, deviceKey: [1]),
                                                 freshCollapseKey: collapseKeyA, now: 1_000)
            let bob = try await store.register(request(account: bob, deviceKey: [2]),
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
            let alice = try await store.register(request(account: alice, deviceKey: [1]),
                                                 freshCollapseKey: collapseKeyA, now: 1_000)
            _ = try await store.register(request(account: bob, deviceKey: [2]), freshCollapseKey: collapseKeyA, now: 1_000)
            let rekeyed = try await store.register(request(account: bob, deviceKey: [3]), freshCollapseKey: collapseKeyB,
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
            let unnamed = try await store.register(request(domain: "other.example", account: nil),
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
            let alice = try await store.register(request(account: alice, deviceKey: [1]), freshCollapseKey: collapseKeyA,
                                                 now: 1_000)
            let bob = try await store.register(request(account: bob, deviceKey: [2]), freshCollapseKey: collapseKeyB,
                                               now: 2_000)
            #expect(try await store.register(request(account: nil, deviceKey: [1]), freshCollapseKey: collapseKeyB,
                                             now: 3_000) == alice)
            #expect(try await store.register(request(account: nil, deviceKey: [2]), freshCollapseKey: collapseKeyA,
                                             now: 4_000) == bob)
        }
    }

    // MARK: Tombstones per account

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
            _ = try await store.register(request(domain: "other.example", account: nil), freshCollapseKey: collapseKeyA,
                                         now: 1_000)
            let otherModule = try await store.register(request(pushModule: "apns", account: "carol@example.org"),
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
            #expect(try await store.registerUnlessBuried(request(account: alice), freshCollapseKey: collapseKeyA,
                                                         now: 2_000, buriedSince: 500) == nil)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 0)
            // Older than the window: registered again.
            #expect(try await store.registerUnlessBuried(request(account: alice), freshCollapseKey: collapseKeyA,
                                                         now: 2_000, buriedSince: 1_500) != nil)
            let bob = try #require(try await store.registerUnlessBuried(
                request(account: bob), freshCollapseKey: collapseKeyA, now: 2_000, buriedSince: 500))
            #expect(try await store.registration(id: bob.id) == bob)

            try await store.buryDeadToken("token-1", pushModule: "fcm", at: 3_000)
            for account in [self.alice, self.bob, nil] {
                #expect(try await store.registerUnlessBuried(request(account: account), freshCollapseKey: collapseKeyA,
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
            try await store.run { database in
                try database.executeScript("""
                    CREATE TEMP TRIGGER refuse_burial BEFORE INSERT ON tombstones
                        BEGIN SELECT RAISE(ABORT, 'injected'); END;
                    """)
            }
            await #expect(throws: SQLiteError.self) { try await store.retire(registrationID: alice.id, at: 1_000) }
            await #expect(throws: SQLiteError.self) { try await store.buryDeadToken("token-1", pushModule: "fcm", at: 1_000) }
            #expect(try await store.registration(id: alice.id) == alice)
            try await store.run { database in try database.executeScript("DROP TRIGGER refuse_burial") }
            try await store.retire(registrationID: alice.id, at: 1_000)
            #expect(try await store.registration(id: alice.id) == nil)
        }
    }
}

/// Migration v2 rebuilds registrations (keyed by account now) and tombstones (scoped) on a database that
/// v1 wrote, without losing a row of theirs or of the tables that reference them.
@Suite struct SQLitePushStoreMigrationTests {
    /// A v1 database: Alice's registration with a chat, a sighting and a retry; a stock registration with
    /// a call and a retry; a third, removed, so the highest id ever handed out is 3; one tombstone.
    private func writeVersionOne(at path: String) throws {
        let database = try Database(.file(path: path))
        try database.migrate(Array(SQLitePushStore.migrations.prefix(1)))
        try database.executeScript("""
            INSERT INTO registrations (id, domain, token, push_module, account, device_key, calls, wants_reads,
                collapse_key, created_at, updated_at, last_push_at, push_count)
            VALUES (1, 'example.org', 'shared', 'fcm', 'alice@example.org', x'01', 'also', 1, x'A1', 100, 100, 150, 4),
                   (2, 'example.org', 'stock', 'fcm', NULL, x'02', 'none', 0, x'B2', 200, 200, NULL, 0),
                   (3, 'example.org', 'gone', 'fcm', NULL, x'03', 'none', 0, x'C3', 300, 300, NULL, 0);
            DELETE FROM registrations WHERE id = 3;
            INSERT INTO chats (registration_id, chat, count, window_ends_at, window_ms, noticed_since_read)
                VALUES (1, 'bob@example.org', 2, 5000, 10000, 1);
            INSERT INTO sightings (registration_id, key, seen_at) VALUES (1, 'm/1', 120);
            INSERT INTO calls (registration_id, sid, chat, caller, media, at) VALUES (2, 'c1', 'x', 'x', 'audio', 210);
            INSERT INTO retries (registration_id, summary, kind, attempts, next_at, deadline)
                VALUES (1, '{}', 'message', 1, 1000, 9000), (2, '{}', 'wake', 1, 2000, 9000);
            INSERT INTO tombstones (token, push_module, buried_at) VALUES ('dead', 'fcm', 400);
            """)
    }

    @Test func versionTwoKeepsEveryRowAndEveryChildRow() async throws {
        try await withTemporaryDatabasePath { path in
            try writeVersionOne(at: path)
            let store = try SQLitePushStore(.file(path: path))

            let alice = try #require(try await store.registration(id: 1))
            #expect(alice.account == "alice@example.org" && alice.token == "shared" && alice.calls == .also)
            #expect(alice.deviceKey == [0x01] && alice.collapseKey == [0xA1] && alice.pushCount == 4)
            #expect(alice.lastPushAt == 150 && alice.wantsReads)
            let stock = try #require(try await store.registration(id: 2))
            #expect(stock.account == nil && stock.token == "stock")
            #expect(try await store.chats(registrationID: 1).map(\.count) == [2])
            #expect(try await !store.firstSighting(registrationID: 1, key: "m/1", at: 130, since: 0))
            #expect(try await store.takeCall(registrationID: 2, sid: "c1", chat: nil)?.media == ["audio"])
            #expect(try await store.claimDueRetries(at: 5_000, limit: 10, leaseUntil: 5_000).map(\.registrationID) == [1, 2])
            #expect(try await store.isBuried(token: "dead", pushModule: "fcm", account: "bob@example.org", since: 0))

            // The highest id ever handed out is kept: a removed registration's id is not reused.
            let bob = try await store.register(
                RegistrationRequest(domain: "example.org", token: "shared", pushModule: "fcm",
                                    account: "bob@example.org", deviceKey: [9], calls: .none, wantsReads: false),
                freshCollapseKey: collapseKeyB, now: 500)
            #expect(bob.id == 4)
            #expect(try await store.registration(id: 1) == alice)

            // Foreign keys are on again: removing Alice's registration takes her chat and retry with it.
            try await store.retire(registrationID: 1, at: 600)
            #expect(try await store.chats(registrationID: 1).isEmpty)
            #expect(try await store.claimDueRetries(at: 5_000, limit: 10, leaseUntil: 5_000).map(\.registrationID) == [2])
            try await store.run { database in
                #expect(try database.userVersion == SQLitePushStore.migrations.last?.version)
                #expect(try database.query("PRAGMA foreign_key_check").isEmpty)
                let sizes = try database.query("SELECT name, count FROM sizes ORDER BY name")
                    .map { row in try "\(row.decode("name", \.stringValue))=\(row.decode("count", \.int64Value))" }
                #expect(sizes == ["registrations=2", "retries=1"])
            }
        }
    }

    @Test func aRebuildThatWouldOrphanARowIsRolledBack() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(.file(path: path))
            try database.migrate([Migration(version: 1, sql: """
                CREATE TABLE parents (id INTEGER PRIMARY KEY);
                CREATE TABLE children (parent INTEGER REFERENCES parents (id) ON DELETE CASCADE);
                INSERT INTO parents VALUES (1), (2);
                INSERT INTO children VALUES (1), (2);
                """)])
            let dropsAParent = Migration(version: 2, rebuildsTables: true, sql: """
                CREATE TABLE parents_v2 (id INTEGER PRIMARY KEY);
                INSERT INTO parents_v2 SELECT id FROM parents WHERE id = 1;
                DROP TABLE parents;
                ALTER TABLE parents_v2 RENAME TO parents;
                """)
            #expect(throws: MigrationError.foreignKeyViolation(version: 2, table: "children")) {
                try database.migrate([Migration(version: 1, sql: ""), dropsAParent])
            }
            #expect(try database.userVersion == 1)
            #expect(try database.queryOne("SELECT count(*) AS n FROM children").decode("n", \.int64Value) == 2)
            // Foreign keys are back on after the failed rebuild.
            try database.execute("DELETE FROM parents WHERE id = 2")
            #expect(try database.queryOne("SELECT count(*) AS n FROM children").decode("n", \.int64Value) == 1)
        }
    }
}

/// Every stored collection is capped, in the write that would pass the cap (StoreLimits).
@Suite struct SQLitePushStoreLimitTests {
    private func store(_ change: (inout StoreLimits) -> Void) throws -> SQLitePushStore {
        var limits = StoreLimits()
        change(&limits)
        return try SQLitePushStore(.memory, limits: limits)
    }

    private func column(_ store: SQLitePushStore, _ sql: String) async throws -> [String] {
        try await store.run { database in try database.query(sql).map { row in try row.decode(row.columns[0], \.stringValue) } }
    }

    @Test func dedupeKeysPastTheCapForgetTheOldest() async throws {
        let store = try store { $0.sightingsPerRegistration = 3 }
        let id = try await registered(store).id
        for index in 0..<5 {
            #expect(try await store.firstSighting(registrationID: id, key: "k\(index)", at: Timestamp(index), since: 0))
        }
        #expect(try await column(store, "SELECT key FROM sightings ORDER BY key") == ["k2", "k3", "k4"])
        #expect(try await !store.firstSighting(registrationID: id, key: "k4", at: 9, since: 0))
    }

    @Test func pushedCallsPastTheCapForgetTheOldest() async throws {
        let store = try store { $0.callsPerRegistration = 2 }
        let id = try await registered(store).id
        for index in 0..<3 {
            try await store.rememberCall(PendingCall(registrationID: id, sid: "s\(index)", chat: "c", caller: "c",
                                                     media: [], at: Timestamp(index)))
        }
        #expect(try await store.takeCall(registrationID: id, sid: "s0", chat: nil) == nil)
        #expect(try await store.takeCall(registrationID: id, sid: "s1", chat: nil) != nil)
        #expect(try await store.takeCall(registrationID: id, sid: "s2", chat: nil) != nil)
    }

    @Test func aNewChatPastTheCapForgetsTheQuietestIdleChatElseIsNotTracked() async throws {
        let store = try store { $0.chatsPerRegistration = 2 }
        let id = try await registered(store).id
        try await store.updateChat(registrationID: id, chat: "idle") { state in
            state = ChatState(registrationID: id, chat: "idle", count: 3, lastMessageAt: 1_000)
        }
        try await openWindow(store, registrationID: id, chat: "open-1", windowEnd: 5_000)
        try await openWindow(store, registrationID: id, chat: "open-2", windowEnd: 6_000)
        #expect(try await store.chats(registrationID: id).map(\.chat) == ["open-1", "open-2"])

        // Every chat has its window open: the new one's change still runs and answers, but is not stored.
        let answer = try await store.updateChat(registrationID: id, chat: "new") { state in
            state = ChatState(registrationID: id, chat: "new", count: 1, windowEndsAt: 7_000)
            return "pushed"
        }
        #expect(answer == "pushed")
        #expect(try await store.chats(registrationID: id).map(\.chat) == ["open-1", "open-2"])
        // A known chat is updated as ever.
        try await openWindow(store, registrationID: id, chat: "open-1", windowEnd: 8_000)
        #expect(try await store.nextWindowEnd() == 6_000)
    }

    @Test func retriesPastTheCapPerRegistrationOrInAllAreRefused() async throws {
        let store = try store {
            $0.retriesPerRegistration = 2
            $0.retries = 3
        }
        let first = try await registered(store, token: "t1").id
        let second = try await registered(store, token: "t2").id
        #expect(try await store.enqueueRetry(retry(first, nextAt: 1)) != nil)
        #expect(try await store.enqueueRetry(retry(first, nextAt: 2)) != nil)
        #expect(try await store.enqueueRetry(retry(first, nextAt: 3)) == nil)
        #expect(try await store.enqueueRetry(retry(second, nextAt: 4)) != nil)
        #expect(try await store.enqueueRetry(retry(second, nextAt: 5)) == nil)
        // Removing a registration frees its retries' room in all.
        try await store.retire(registrationID: first, at: 10)
        #expect(try await store.enqueueRetry(retry(second, nextAt: 6)) != nil)
        #expect(try await store.claimDueRetries(at: 10, limit: 10, leaseUntil: 90_000).map(\.registrationID) == [second, second])
    }

    @Test func anAccountPastItsCapLosesItsLeastRecentlyUsedRegistration() async throws {
        let store = try store { $0.registrationsPerAccount = 2 }
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
        let stock = try await store.register(request(token: "t4", account: nil), freshCollapseKey: collapseKeyA,
                                             now: 5_000)
        let adopted = try await store.register(request(token: "t4"), freshCollapseKey: collapseKeyA, now: 6_000)
        #expect(adopted.id == stock.id)
        #expect(try await store.countRegistrations(matching: RegistrationFilter(account: "alice@example.org")) == 2)
        #expect(try await store.registration(id: old.id) == nil)
    }

    @Test func aNewRegistrationPastTheCapInAllIsRefused() async throws {
        let store = try store { $0.registrations = 2 }
        let first = try await registered(store, token: "t1")
        _ = try await registered(store, token: "t2", account: "bob@example.org")
        await #expect(throws: StoreCapacityError(collection: "registrations", limit: 2)) {
            try await registered(store, token: "t3", account: "carol@example.org")
        }
        // Known registrations still update.
        let rekeyed = try await store.register(request(token: "t1", deviceKey: [9]), freshCollapseKey: collapseKeyB,
                                               now: 2_000)
        #expect(rekeyed.id == first.id)
        try await store.retire(registrationID: first.id, at: 3_000)
        _ = try await registered(store, token: "t3", account: "carol@example.org")
    }

    @Test func counterNamesPastTheCapAreNotStored() async throws {
        let store = try store { $0.counters = 2 }
        try await store.increment(["a": 1, "b": 1])
        try await store.increment(["c": 1])
        try await store.increment(["a": 2])
        #expect(try await store.counters() == ["a": 3, "b": 1])
    }
}

/// A full disk or a read-only database is a thrown error (the push path answers `wait`), never a crash,
/// and the store works again once the fault is gone.
@Suite struct SQLitePushStoreFaultTests {
    private struct Injected: Error {}

    private func fill(_ store: SQLitePushStore) async throws -> SQLiteError {
        for index in 0..<10_000 {
            do {
                _ = try await store.register(request(token: "filler-\(index)-" + String(repeating: "x", count: 500),
                                                     account: "user\(index)@example.org"),
                                             freshCollapseKey: collapseKeyA, now: 1_000)
            } catch let error as SQLiteError {
                return error
            }
        }
        Issue.record("the database never filled")
        return SQLiteError(code: 0, message: "")
    }

    @Test(arguments: StoreKind.allCases)
    func aFullDatabaseThrowsAndRecoversWhenSpaceReturns(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store)
            try await store.run { database in
                let pages = try database.queryOne("PRAGMA page_count").decode("page_count", \.int64Value)
                try database.executeScript("PRAGMA max_page_count = \(pages + 2)")
            }
            let error = try await fill(store)
            #expect(error.primaryCode == 13)  // SQLITE_FULL
            #expect(try await store.run { $0.isInTransaction } == false)
            // Reads still work, and so does every write that needs no new page... until space returns.
            #expect(try await store.registration(id: alice.id) == alice)
            try await store.run { database in try database.executeScript("PRAGMA max_page_count = 1073741823") }
            let bob = try await registered(store, token: "after", account: "bob@example.org")
            #expect(try await store.registration(id: bob.id) == bob)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aReadOnlyDatabaseThrowsAndRecoversWhenWritableAgain(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store)
            try await store.run { database in try database.executeScript("PRAGMA query_only = 1") }
            await #expect {
                _ = try await store.firstSighting(registrationID: alice.id, key: "m1", at: 1_000, since: 0)
            } throws: { error in
                (error as? SQLiteError)?.primaryCode == 8  // SQLITE_READONLY
            }
            await #expect(throws: SQLiteError.self) { try await store.retire(registrationID: alice.id, at: 1_000) }
            #expect(try await store.run { $0.isInTransaction } == false)
            #expect(try await store.registration(id: alice.id) == alice)
            try await store.run { database in try database.executeScript("PRAGMA query_only = 0") }
            #expect(try await store.firstSighting(registrationID: alice.id, key: "m1", at: 1_000, since: 0))
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

    @Test func aHeldNoticeThatIsNoLongerItsJSONIsAnErrorNamingItsColumn() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            let alice = try await registered(store)
            try await openWindow(store, registrationID: alice.id, chat: "bob@example.org", windowEnd: 2_000)
            try Database(.file(path: path)).executeScript(#"UPDATE chats SET held = '{"from": 1}'"#)
            let error = await #expect(throws: RowDecodingError.self) { try await store.dueWindows(at: 5_000, limit: 10) }
            #expect(error?.description.hasPrefix("column held holds a TEXT that is no value this build knows in") == true)
        }
    }

    @Test func aDamagedRetryIsAnErrorNamingItsColumnAndIsNotClaimed() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            let alice = try await registered(store)
            try await store.enqueueRetry(retry(alice.id, nextAt: 1_000))
            try Database(.file(path: path)).executeScript("UPDATE retries SET attempts = 'many'")
            let error = await #expect(throws: RowDecodingError.self) {
                try await store.claimDueRetries(at: 2_000, limit: 10, leaseUntil: 9_000)
            }
            #expect(error?.description.hasPrefix("column attempts holds an unexpected TEXT in \"SELECT") == true)
            // Nothing was leased or lost: the item is due as it was.
            #expect(try await store.nextRetry() == 1_000)
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

    @Test func aTransactionThatAFailureLeftOpenIsRolledBack() async throws {
        let store = try SQLitePushStore(.memory)
        await #expect(throws: Injected.self) {
            try await store.run { database in
                try database.execute("BEGIN")
                try database.execute("INSERT INTO counters (name, value) VALUES ('half-done', 1)")
                throw Injected()
            }
        }
        #expect(try await store.run { $0.isInTransaction } == false)
        #expect(try await store.counters().isEmpty)
    }
}

/// The store's statements block (here on another connection's write lock, as they would on a slow disk)
/// on a thread of the store's own, never on the cooperative pool, which stays free for other work.
@Suite struct SQLitePushStoreThreadTests {
    /// Another connection, holding the write lock until `release`.
    private final class LockHolder: @unchecked Sendable {
        private let database: Database
        private let lock = NSLock()

        init(path: String) throws {
            database = try Database(.file(path: path))
            try database.execute("BEGIN IMMEDIATE")
        }

        func release() {
            lock.withLock { try? database.execute("ROLLBACK") }
        }
    }

    /// More blocked store calls than the pool has threads; the lock is released only by a task that
    /// needs a thread of the pool. Were the calls blocking pool threads, that task could not run until
    /// the busy timeout failed them.
    @Test func blockedStatementsLeaveTheCooperativePoolFree() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            let holder = try LockHolder(path: path)
            let callers = ProcessInfo.processInfo.activeProcessorCount + 2
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<callers {
                    group.addTask { try await store.increment(["call-\(index)": 1]) }
                }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(300))
                    holder.release()
                }
                try await group.waitForAll()
            }
            #expect(try await store.counters().count == callers)
        }
    }
}
