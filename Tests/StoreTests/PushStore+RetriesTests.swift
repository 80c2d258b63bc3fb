import SQLCore
import SQLite
import SQLiteTesting
import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Retries {}
}

extension PushStoreTests.Retries {
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
            await #expect {
                try await store.updateChatAndEnqueue(registrationID: id, chat: "d") { state in
                    state?.windowEndsAt = nil
                    return ((), retry(42, nextAt: 100))
                }
            } throws: { isConstraintViolation($0) }
            #expect(try await store.dueWindows(at: 1_000, limit: 10).map(\.chat) == ["d"])
        }
    }

    /// Issue 20, item 4: a message push in the outbox keeps the generation of its chat it was decided
    /// at, and the chat keeps its own, so a claimed retry can be compared with the chat as it is now.
    @Test(arguments: StoreKind.allCases)
    func aStoredPushAndItsChatKeepTheirGenerations(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            var decided = retry(id, nextAt: 100)
            decided.generation = 41
            let item = decided
            _ = try await store.updateChatAndEnqueue(registrationID: id, chat: "bob@example.org") { state in
                state = ChatState(registrationID: id, chat: "bob@example.org", count: 1, generation: 41)
                return ((), item)
            }
            _ = try await store.updateChat(registrationID: id, chat: "bob@example.org") { state in
                state?.generation = 42
            }
            let claimed = try await store.claimDueRetries(at: 100, limit: 10, leaseUntil: 200)
            #expect(claimed.map(\.generation) == [41])
            #expect(try await store.chats(registrationID: id).map(\.generation) == [42])
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
        try await withStore(kind) { store async throws in
            await #expect { try await store.enqueueRetry(retry(42, nextAt: 100)) } throws: { isConstraintViolation($0) }
            #expect(try await store.nextRetry() == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func retriesPastTheCapPerRegistrationOrInAllAreRefused(kind: StoreKind) async throws {
        try await withStore(
            kind,
            limits: changedLimits {
                $0.retriesPerRegistration = 2
                $0.retries = 3
            }
        ) { store async throws in
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
            #expect(
                try await store.claimDueRetries(at: 10, limit: 10, leaseUntil: 90_000).map(\.registrationID) == [
                    second, second,
                ])
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

    /// The outbox's reads go through an index, never a scan of every stored push: the claims through
    /// next_at (calls through their own), the sweep of expired items too (an expired item is swept
    /// once it is due), so no index of the deadline is written for every push.
    @Test func theOutboxsReadsUseTheNextTimesIndexes() async throws {
        let store = try SQLitePushStore(.memory)
        let plans = try await store.run { database in
            try [
                "SELECT kind, count(*) AS n FROM retries WHERE deadline < ?1 AND next_at <= ?1 GROUP BY kind",
                "SELECT * FROM retries WHERE kind <> 'call' AND next_at <= ?1 AND deadline >= ?1 ORDER BY next_at, id",
                "SELECT * FROM retries WHERE kind = 'call' AND next_at <= ?1 AND deadline >= ?1 ORDER BY next_at, id",
            ].map { sql in
                try database.query("EXPLAIN QUERY PLAN " + sql, [.integer(5)]).map {
                    try $0.decode("detail", \.stringValue)
                }
                .joined(separator: "; ")
            }
        }
        #expect(plans[0].contains("USING INDEX retries_by_next"))
        #expect(plans[1].contains("USING INDEX retries_by_next"))
        #expect(plans[2].contains("USING INDEX retries_calls_by_next"))
        let indexes = try await store.run { database in
            try database.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'retries'")
                .map { try $0.decode("name", \.stringValue) }
        }
        #expect(!indexes.contains("retries_by_deadline"))
    }
}
