import Foundation
import PostgreSQL
import SQLCore
import SQLite
import SQLiteTesting
import Testing

@testable import Store

/// `withStore` for what only SQLite has; `kind` is one of `StoreKind.sqlite`.
func withSQLiteStore<T>(
    _ kind: StoreKind, limits: StoreLimits = StoreLimits(), _ body: (SQLitePushStore) async throws -> T
) async throws -> T {
    switch kind {
    case .memory:
        return try await body(SQLitePushStore(.memory, limits: limits))
    case .file:
        return try await withTemporaryDatabasePath { path in
            try await body(SQLitePushStore(.file(path: path), limits: limits))
        }
    case .postgresql:
        throw UnusableStoreError(reason: "not an SQLite store")
    }
}

@Suite struct SQLitePushStoreTests {}

extension SQLitePushStoreTests {
    /// What one store wrote, another reads from the file.
    @Suite struct Persistence {
        /// Everything a burst leaves behind, written through one store and checked through another.
        private struct Burst {
            var registration: Registration
            var chat: ChatState
            var retry: RetryItem
            var call: PendingCall

            init(writingTo store: SQLitePushStore) async throws {
                registration = try await store.register(
                    request(calls: .also, wantsReads: true),
                    freshCollapseKey: collapseKeyA, now: 1_000)
                try await store.recordPush(registrationID: registration.id, at: 1_100, error: nil)
                registration.pushCount = 1
                registration.lastPushAt = 1_100
                registration.lastUsedAt = 1_100
                let notice = HeldNotice(from: "bob@example.org", id: "m2", groupchat: false, mention: false, at: 1_200)
                chat = ChatState(
                    registrationID: registration.id, chat: "bob@example.org", count: 2,
                    lastMessageAt: 1_200, windowEndsAt: 11_100, held: notice, noticedSinceRead: true)
                let state = chat
                try await store.updateChat(registrationID: registration.id, chat: state.chat) { $0 = state }
                retry = RetryItem(
                    registrationID: registration.id, summary: #"{"count":2}"#, kind: "message",
                    collapseChat: "bob@example.org", attempts: 1, nextAt: 3_000, deadline: 121_100)
                retry.id = try #require(await store.enqueueRetry(retry))
                call = PendingCall(
                    registrationID: registration.id, sid: "call-1", chat: "bob@example.org",
                    caller: "bob@example.org/phone", media: ["audio", "video"], at: 1_300)
                try await store.rememberCall(call)
                _ = try await store.firstSighting(registrationID: registration.id, key: "m2", at: 1_200, since: 0)
                try await store.buryDeadToken("dead", pushModule: "fcm", at: 1_400)
                try await store.increment(["pushed": 1])
                _ = try await store.recordUnknownNodeAnswer(at: 1_500, since: 0, limit: 5, account: "", accountLimit: 5)
                try await store.setPolicy(account: "alice@example.org", json: #"{"window":10}"#)
            }

            func expectRecovered(by store: SQLitePushStore) async throws {
                #expect(
                    try await store.registration(
                        domain: registration.domain, token: registration.token,
                        account: registration.account) == registration)
                #expect(try await store.nextWindowEnd() == chat.windowEndsAt)
                #expect(try await store.dueWindows(at: 20_000, limit: 10) == [chat])
                #expect(try await store.nextRetry() == retry.nextAt)
                #expect(try await store.claimDueRetries(at: 20_000, limit: 10, leaseUntil: retry.nextAt) == [retry])
                #expect(try await store.takeCall(registrationID: registration.id, sid: call.sid, chat: nil) == call)
                #expect(try await !store.firstSighting(registrationID: registration.id, key: "m2", at: 2_000, since: 0))
                #expect(try await store.isBuried(token: "dead", pushModule: "fcm", account: nil, since: 0))
                #expect(try await store.counters() == ["pushed": 1])
                #expect(
                    try await !store.recordUnknownNodeAnswer(
                        at: 2_000, since: 0, limit: 1, account: "", accountLimit: 1))
                #expect(try await store.policy(account: "alice@example.org") == #"{"window":10}"#)
            }
        }
    }
}

extension SQLitePushStoreTests.Persistence {
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

extension SQLitePushStoreTests {
    /// A full disk or a read-only database is a thrown error (the push path answers `wait`), never a crash,
    /// and the store works again once the fault is gone.
    @Suite struct Faults {
        private struct Injected: Error {}

        private func fill(_ store: SQLitePushStore) async throws -> SQLiteError {
            for index in 0..<10_000 {
                do {
                    _ = try await store.register(
                        request(
                            token: "filler-\(index)-" + String(repeating: "x", count: 500),
                            account: "user\(index)@example.org"),
                        freshCollapseKey: collapseKeyA, now: 1_000)
                } catch let error as SQLiteError {
                    return error
                }
            }
            Issue.record("the database never filled")
            return SQLiteError(code: 0, message: "")
        }
    }
}

extension SQLitePushStoreTests.Faults {
    @Test(arguments: StoreKind.sqlite)
    func aFullDatabaseThrowsAndRecoversWhenSpaceReturns(kind: StoreKind) async throws {
        try await withSQLiteStore(kind) { store in
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

    @Test(arguments: StoreKind.sqlite)
    func aReadOnlyDatabaseThrowsAndRecoversWhenWritableAgain(kind: StoreKind) async throws {
        try await withSQLiteStore(kind) { store in
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

extension SQLitePushStoreTests {
    /// The store's statements block (here on another connection's write lock, as they would on a slow disk)
    /// on a thread of the store's own, never on the cooperative pool, which stays free for other work.
    @Suite struct Threads {
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
    }
}

extension SQLitePushStoreTests.Threads {
    /// More blocked store calls than the pool has threads; the lock is released only by a task that
    /// needs a thread of the pool. Were the calls blocking pool threads, that task could not run until
    /// the busy timeout (5 s) failed them, in every attempt. A suite beside it may hold the pool that
    /// long on a loaded machine, so one attempt that times out is tried again, up to three.
    @Test func blockedStatementsLeaveTheCooperativePoolFree() async throws {
        for attempt in 1...3 {
            do {
                try await blockedCallsFinishOnceATaskOfThePoolReleasesTheLock()
                return
            } catch let error as SQLiteError where error.primaryCode == 5 && attempt < 3 {  // SQLITE_BUSY
                continue
            }
        }
    }

    private func blockedCallsFinishOnceATaskOfThePoolReleasesTheLock() async throws {
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

extension SQLitePushStoreTests {
    /// Transactions that wait while the store's thread is busy share one commit, each in a savepoint.
    @Suite struct GroupCommit {
        private struct Injected: Error {}

        /// The store's thread held (`holdingTheThread`) while `transactions` are queued behind it (each recording an unknown node's answer at its time, the
        /// one at `failing` then failing) and run together once it opens. Returns each one's outcome.
        private func batch(
            _ store: SQLitePushStore, times: [Timestamp], failing: Timestamp,
            abortingEverything: Bool = false
        ) async throws -> [Timestamp: Result<Bool, any Error>] {
            var outcomes: Task<[Timestamp: Result<Bool, any Error>], Never>?
            try await holdingTheThread(store) {
                outcomes = Task {
                    await withTaskGroup(of: (Timestamp, Result<Bool, any Error>).self) { group in
                        for at in times {
                            group.addTask {
                                let result: Result<Bool, any Error>
                                do {
                                    result = .success(
                                        try await store.transaction { transaction in
                                            let recorded = try transaction.recordUnknownNodeAnswer(
                                                at: at, since: 0, limit: 100, account: "", accountLimit: 100)
                                            guard at == failing else { return recorded }
                                            if abortingEverything, let sqlite = transaction as? SQLitePushTransaction {
                                                // What SQLite does itself on a full disk: the whole transaction ends.
                                                try sqlite.database.execute("ROLLBACK")
                                            }
                                            throw Injected()
                                        })
                                } catch {
                                    result = .failure(error)
                                }
                                return (at, result)
                            }
                        }
                        var outcomes: [Timestamp: Result<Bool, any Error>] = [:]
                        for await (at, result) in group { outcomes[at] = result }
                        return outcomes
                    }
                }
                try await waiting(store, times.count)
            }
            return await outcomes?.value ?? [:]
        }

        private func recorded(_ store: SQLitePushStore) async throws -> Set<Timestamp> {
            try await store.run { database in
                Set(try database.query("SELECT at FROM unknown_node_answers").map { try $0.decode("at", \.int64Value) })
            }
        }

        @Test func aFailingTransactionOfABatchIsRolledBackAloneAndTheOthersCommit() async throws {
            let store = try SQLitePushStore(.memory)
            let outcomes = try await batch(store, times: [1_000, 2_000, 3_000], failing: 2_000)
            #expect(try outcomes[1_000]?.get() == true)
            #expect(try outcomes[3_000]?.get() == true)
            #expect(throws: Injected.self) { try outcomes[2_000]?.get() }
            #expect(try await recorded(store) == [1_000, 3_000])
            #expect(try await store.run { $0.isInTransaction } == false)
        }

        /// A failure that ends the whole transaction (a full disk) fails every caller of the batch, the
        /// ones whose bodies had succeeded too: none of their writes was committed.
        @Test func aFailureThatEndsTheTransactionFailsEveryCallerOfTheBatch() async throws {
            let store = try SQLitePushStore(.memory)
            let outcomes = try await batch(
                store, times: [1_000, 2_000, 3_000], failing: 2_000, abortingEverything: true)
            for at: Timestamp in [1_000, 2_000, 3_000] {
                #expect(throws: (any Error).self) { try outcomes[at]?.get() }
            }
            #expect(try await recorded(store).isEmpty)
            #expect(try await store.run { $0.isInTransaction } == false)
            // The store goes on.
            #expect(
                try await store.recordUnknownNodeAnswer(at: 4_000, since: 0, limit: 100, account: "", accountLimit: 100)
            )
            #expect(try await recorded(store) == [4_000])
        }

        /// The store's thread held until `body` has queued what it wants behind it; then released.
        private func holdingTheThread(_ store: SQLitePushStore, while body: () async throws -> Void) async throws {
            let (gate, started) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
            let busy = Task {
                try await store.run { _ in
                    started.signal()
                    gate.wait()
                }
            }
            while started.wait(timeout: .now()) != .success { try await Task.sleep(for: .milliseconds(5)) }
            do { try await body() } catch {
                gate.signal()
                throw error
            }
            gate.signal()
            try await busy.value
        }

        private func waiting(_ store: SQLitePushStore, _ count: Int) async throws {
            while store.transactionsWaiting < count { try await Task.sleep(for: .milliseconds(5)) }
        }

        @Test func aDecidedTransactionReturnsItsValueAndThenItsCommit() async throws {
            let store = try SQLitePushStore(.memory)
            let decided = try await store.transactionDecided {
                try $0.recordUnknownNodeAnswer(at: 1_000, since: 0, limit: 100, account: "", accountLimit: 100)
            }
            #expect(decided.value)
            try await decided.commit.committed()
            #expect(try await recorded(store) == [1_000])
        }

        @Test func aDecidedTransactionWhoseBodyThrowsThrowsAtOnceAndWritesNothing() async throws {
            let store = try SQLitePushStore(.memory)
            await #expect(throws: Injected.self) {
                _ = try await store.transactionDecided { transaction in
                    _ = try transaction.recordUnknownNodeAnswer(
                        at: 1_000, since: 0, limit: 100, account: "", accountLimit: 100)
                    throw Injected()
                }
            }
            #expect(try await recorded(store).isEmpty)
        }

        /// Its value comes before the commit: a commit that then fails (another transaction of the batch
        /// ended it, as a full disk does) reaches the caller through `committed()`, and nothing is written.
        @Test func aDecidedTransactionHearsOfACommitThatFailsAfterItsValue() async throws {
            let store = try SQLitePushStore(.memory)
            var decided: Task<Decided<Bool>, any Error>?
            var aborting: Task<Void, any Error>?
            try await holdingTheThread(store) {
                decided = Task {
                    try await store.transactionDecided {
                        try $0.recordUnknownNodeAnswer(at: 1_000, since: 0, limit: 100, account: "", accountLimit: 100)
                    }
                }
                try await waiting(store, 1)
                aborting = Task {
                    try await store.transaction { transaction in
                        if let sqlite = transaction as? SQLitePushTransaction {
                            try sqlite.database.execute("ROLLBACK")
                        }
                        throw Injected()
                    }
                }
                try await waiting(store, 2)
            }
            let outcome = try await decided?.value
            #expect(outcome?.value == true)
            await #expect(throws: (any Error).self) { try await outcome?.commit.committed() }
            await #expect(throws: (any Error).self) { try await aborting?.value }
            #expect(try await recorded(store).isEmpty)
        }

        /// Work nobody waits for is committed by itself soon after, seen by another connection, and
        /// before any later call of this store.
        @Test func workInTheBackgroundIsCommittedSoonAndBeforeAnyLaterCall() async throws {
            try await withTemporaryDatabasePath { path in
                let store = try SQLitePushStore(.file(path: path))
                store.transactionInBackground(
                    {
                        _ = try $0.recordUnknownNodeAnswer(
                            at: 1_000, since: 0, limit: 100, account: "", accountLimit: 100)
                    },
                    failed: { Issue.record("\($0)") })
                #expect(try await recorded(store) == [1_000])

                store.transactionInBackground(
                    {
                        _ = try $0.recordUnknownNodeAnswer(
                            at: 2_000, since: 0, limit: 100, account: "", accountLimit: 100)
                    },
                    failed: { Issue.record("\($0)") })
                let reader = try Database(.file(path: path))
                let deadline = ContinuousClock.now + .seconds(10)
                var seen: Int64 = 0
                while seen < 2, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                    seen = try reader.queryOne("SELECT count(*) AS n FROM unknown_node_answers").decode(
                        "n", \.int64Value)
                }
                #expect(seen == 2)
            }
        }
    }
}
