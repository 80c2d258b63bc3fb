import Foundation
import PostgreSQL
import SQLCore
import SQLite
import Testing
import LocalServers

@testable import Store

/// What only the PostgreSQL store has: a server that goes away and comes back, several connections at
/// once, a URL with a password. Everything else is the store suite, run on every engine.
@Suite struct PostgreSQLPushStoreTests {
    /// A server of the test's own, to stop and start under a store.
    private func isTransient(_ error: any Error) -> Bool {
        (error as? any TransientStoreFault)?.transientKind != nil
    }

    @Test func whileTheServerIsAwayCallsFailAsTransientAndTheStoreRecoversAfterARestart() async throws {
        try await withOwnPostgreSQLServer { server in
            let store = try await PostgreSQLPushStore.open(
                url: server.url, componentSecret: TestDatabase.componentSecret, reconnectInterval: .zero)
            #expect(store.unavailableAtStart == nil)
            let alice = try await registered(store)
            // Every connection of the pool is in use once, so each has to notice the restart.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<8 { group.addTask { try await store.increment(["c\(index)": 1]) } }
                try await group.waitForAll()
            }

            await server.stop()
            for _ in 0..<3 {
                await #expect { _ = try await store.registration(id: alice.id) } throws: { isTransient($0) }
            }
            await #expect {
                _ = try await store.transaction {
                    try $0.registration(domain: "example.org", token: "token-1", account: nil)
                }
            } throws: { isTransient($0) }

            // The first lost connection dropped the idle ones with it: the first call after the restart
            // works.
            try await server.start()
            #expect(try await store.registration(id: alice.id) == alice)
            #expect(try await store.counters().count == 8)
        }
    }

    @Test func aStoreStartedBeforeItsServerIsUnavailableThenMigratedOnFirstUse() async throws {
        let server = try PostgreSQLServer()
        let store = try await PostgreSQLPushStore.open(
            url: server.url, componentSecret: TestDatabase.componentSecret, reconnectInterval: .zero)
        #expect(store.unavailableAtStart != nil)
        #expect(store.unavailableAtStart.map(isTransient) == true)
        await #expect(throws: StoreUnavailableError.self) { try await store.counters() }
        try await server.start()
        try await store.increment(["pushed": 1])
        #expect(try await store.counters() == ["pushed": 1])
        await server.stop()
    }

    @Test func anUnreachableServerIsTriedAgainAtMostOncePerInterval() async throws {
        let server = try PostgreSQLServer()
        let store = try await PostgreSQLPushStore.open(
            url: server.url, componentSecret: TestDatabase.componentSecret, reconnectInterval: .seconds(3600))
        try await server.start()
        // Reachable now, but the last try was just now: this call fails without trying.
        await #expect(throws: StoreUnavailableError.self) { try await store.counters() }
        await server.stop()
    }

    @Test func neitherTheTargetNorAnErrorShowsThePassword() async throws {
        let port = try TestPorts.next()
        let store = try await PostgreSQLPushStore.open(
            url: "postgresql://apush:hunter2-secret@127.0.0.1:\(port)/apush",
            componentSecret: TestDatabase.componentSecret)
        #expect(store.target == "apush@127.0.0.1:\(port)/apush")
        #expect(store.unavailableAtStart.map { "\($0)".contains("hunter2") } == false)
        await #expect { try await store.counters() } throws: { !"\($0)".contains("hunter2") }
    }

    @Test func aURLOfAnotherSchemeIsUnusable() async {
        await #expect(throws: UnusableStoreError.self) {
            try await PostgreSQLPushStore.open(
                url: "mysql://localhost/apush", componentSecret: TestDatabase.componentSecret)
        }
    }

    /// Many publishes of one new device at once, on several connections: one registration, no error.
    @Test func concurrentRegistrationsOfOneTokenMakeOne() async throws {
        try await withStore(.postgresql) { store in
            let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
                for _ in 0..<16 { group.addTask { try await registered(store).id } }
                return try await group.reduce(into: Set<Int64>()) { $0.insert($1) }
            }
            #expect(ids.count == 1)
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 1)
        }
    }

    /// A background transaction (a push's answer) holds up no later call, though it is slow, and answers
    /// recorded out of order keep the latest push's time: instances interleave their transactions anyway.
    @Test func aBackgroundTransactionHoldsUpNoLaterCallAndItsOrderDoesNotMatter() async throws {
        try await withStore(.postgresql) { store in
            let id = try await registered(store).id
            let release = DispatchSemaphore(value: 0)
            let done = DispatchSemaphore(value: 0)
            store.transactionInBackground(
                { transaction in
                    _ = release.wait(timeout: .now() + 20)
                    try transaction.recordPush(registrationID: id, at: 1_000, error: nil, removingRetry: nil)
                    done.signal()
                }, failed: { Issue.record("\($0)") })
            try await store.recordPush(registrationID: id, at: 2_000, error: nil)
            #expect(try await store.registration(id: id)?.pushCount == 1, "ran while the background one waits")
            release.signal()
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    _ = done.wait(timeout: .now() + 20)
                    continuation.resume()
                }
            }
            let registration = try #require(try await store.registration(id: id))
            #expect(registration.pushCount == 2)
            #expect(registration.lastPushAt == 2_000, "the later push's time is kept")
        }
    }

    /// The dedupe key and the caps hold across connections: of many publishes of one message at once,
    /// one is new.
    @Test func concurrentSightingsOfOneKeyFindItNewOnce() async throws {
        try await withStore(.postgresql) { store in
            let id = try await registered(store).id
            let firsts = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<16 {
                    group.addTask { try await store.firstSighting(registrationID: id, key: "m1", at: 1_000, since: 0) }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(firsts == 1)
        }
    }

    /// Two instances find the same window ended at once: the registration's row serialises their
    /// decisions, so the one that comes second sees it taken, and one push is queued, not two.
    @Test func aWindowEndedIsTakenOnceByInstancesOnOneDatabase() async throws {
        try await TestDatabase.withSchema { url in
            let instances = [
                try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret),
                try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret),
            ]
            let id = try await registered(instances[0]).id
            for round in 0..<20 {
                let chat = "chat\(round)@example.org"
                try await openWindow(instances[0], registrationID: id, chat: chat, windowEnd: 1_000)
                let queued = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<4 {
                        group.addTask {
                            try await instances[index % 2].updateChatAndEnqueue(registrationID: id, chat: chat) {
                                state -> (Void, RetryItem?) in
                                guard let end = state?.windowEndsAt, end <= 2_000 else { return ((), nil) }
                                state?.windowEndsAt = nil
                                return ((), retry(id, nextAt: 2_000))
                            }.1 != nil
                        }
                    }
                    return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
                }
                #expect(queued == 1, "round \(round)")
            }
            #expect(try await claimIDs(instances[1], at: 2_000, limit: 100).count == 20)
        }
    }

    /// Issue 22 item 5: two instances count messages of one registration's chats at once. The total read
    /// before a chat's change holds the registration until the change commits, so every message sees
    /// the total the ones before it left (no two the same), and none is lost.
    @Test func theUnreadTotalIsCountedOnceForEachMessageByInstancesOnOneDatabase() async throws {
        try await TestDatabase.withSchema { url in
            let instances = [
                try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret),
                try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret),
            ]
            let id = try await registered(instances[0]).id
            let messages = 40
            let badges = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<messages {
                    group.addTask {
                        try await instances[index % 2].transaction { transaction in
                            try transaction.updateChat(
                                registrationID: id, chat: "chat\(index % 3)@example.org", unreadExcluding: []
                            ) { state, before in
                                var counted = state ?? ChatState(registrationID: id, chat: "")
                                counted.count += 1
                                state = counted
                                return (before ?? -1) + 1
                            }
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(badges.sorted() == Array(1...messages))
            #expect(
                try await instances[1].transaction {
                    try $0.updateChat(registrationID: id, chat: "nobody@example.org", unreadExcluding: []) { $1 }
                } == messages
            )
        }
    }

    /// Another instance migrates the schema (here: a column added to `registrations`) while this one's
    /// sessions hold statements prepared before: a transaction that meets one stale runs again, with it
    /// prepared anew, and succeeds.
    @Test func aTransactionThatMeetsAStalePreparedStatementRunsAgain() async throws {
        try await TestDatabase.withSchema { url in
            let store = try await PostgreSQLPushStore.open(
                url: url, componentSecret: TestDatabase.componentSecret, connections: 1)
            let lookUp: @Sendable (any PushTransaction) throws -> Int64? = {
                try $0.registration(domain: "example.org", token: "token-1", account: "alice@example.org")?.id
            }
            let id = try await registered(store).id
            #expect(try await store.transaction(lookUp) == id)
            _ = try await TestDatabase.offThePool {
                try Connection(url).execute("ALTER TABLE registrations ADD COLUMN added_later text")
            }
            #expect(try await store.transaction(lookUp) == id)
        }
    }

    /// Issue 23 item 3: a message's publish costs four round trips, its commit included (the
    /// tombstone, the token's lock, the registration and the policy generation; the dedupe key; the
    /// chat, the unread total and the outbox's room; the writes and the commit), and its answer one,
    /// counted by the connections. What the queued writes wrote is all there.
    @Test func aPublishCostsFourRoundTripsAndItsAnswerOne() async throws {
        try await withStore(.postgresql) { store in
            let postgresql = try #require(store as? PostgreSQLPushStore)
            _ = try await registered(store)
            let before = postgresql.roundTrips
            let (unread, item) = try await store.transaction { transaction in
                let registration = try #require(
                    try transaction.registerUnlessBuried(
                        request(token: "token-1", account: "alice@example.org"), freshCollapseKey: collapseKeyA,
                        now: 2_000, buriedSince: 0))
                _ = try transaction.policyGeneration()
                #expect(try transaction.firstSighting(registrationID: registration.id, key: "m1", at: 2_000, since: 0))
                return try transaction.updateChatAndEnqueue(
                    registrationID: registration.id, chat: "bob@example.org", unreadExcluding: ["muted@example.org"]
                ) { state, unread in
                    state = ChatState(registrationID: registration.id, chat: "bob@example.org", count: 1)
                    return (unread, retry(registration.id, nextAt: 2_000))
                }
            }
            let publish = postgresql.roundTrips
            #expect(publish.transactions - before.transactions == 1)
            #expect(publish.roundTrips - before.roundTrips == 4)
            #expect(unread == 0)
            let stored = try #require(item)
            #expect(try await claimIDs(store, at: 2_000) == [stored.id])
            #expect(try await store.chats(registrationID: stored.registrationID).map(\.count) == [1])

            store.transactionInBackground(
                {
                    try $0.recordPush(
                        registrationID: stored.registrationID, at: 2_100, error: nil, removingRetry: stored.id)
                },
                failed: { Issue.record("\($0)") })
            let deadline = ContinuousClock.now + .seconds(30)
            while postgresql.roundTrips.backgroundTransactions == before.backgroundTransactions,
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(10))
            }
            let answer = postgresql.roundTrips
            #expect(answer.backgroundTransactions - before.backgroundTransactions == 1)
            #expect(answer.backgroundRoundTrips - before.backgroundRoundTrips == 1)
            #expect(try await claimIDs(store, at: 1_000_000).isEmpty, "the answer removed the item")
            #expect(try await store.registration(id: stored.registrationID)?.pushCount == 1)
        }
    }

    /// A chat's change that reads the room for an item finds none past the registration's cap, and
    /// queues nothing; the chat's change is kept all the same.
    @Test func anItemPastTheRegistrationsCapIsDroppedAndTheChatKept() async throws {
        var limits = StoreLimits()
        limits.retriesPerRegistration = 1
        try await withStore(.postgresql, limits: limits) { store in
            let id = try await registered(store).id
            for (index, expected) in [true, false].enumerated() {
                let (_, item) = try await store.updateChatAndEnqueue(registrationID: id, chat: "c\(index)@example.org")
                {
                    state -> (Void, RetryItem?) in
                    state = ChatState(registrationID: id, chat: "", count: 1)
                    return ((), retry(id, nextAt: 2_000))
                }
                #expect((item != nil) == expected)
            }
            #expect(try await store.chats(registrationID: id).count == 2)
            #expect(try await claimIDs(store, at: 2_000).count == 1)
        }
    }

    /// A statement that waits on a lock past the timeout (an operator's session holding a row) fails
    /// as a fault that may pass, so the publish is answered `wait`, and the store works once it is free.
    @Test func aStatementWaitingPastItsTimeoutFailsAsTransient() async throws {
        try await TestDatabase.withSchema { url in
            // Past what a statement takes on a loaded machine, well short of the test's limit.
            let store = try await PostgreSQLPushStore.open(
                url: url, componentSecret: TestDatabase.componentSecret, statementTimeout: .seconds(2))
            let id = try await registered(store).id
            let operatorSession = try Connection(url)
            try operatorSession.execute("BEGIN")
            try operatorSession.execute("SELECT 1 FROM registrations WHERE id = $1 FOR UPDATE", [.integer(id)])
            await #expect {
                try await openWindow(store, registrationID: id, chat: "bob@example.org", windowEnd: 1_000)
            } throws: { error in
                (error as? PostgreSQLError)?.sqlState == "57014" && isTransient(error)
            }
            try operatorSession.execute("ROLLBACK")
            try await openWindow(store, registrationID: id, chat: "bob@example.org", windowEnd: 1_000)
            #expect(try await store.chats(registrationID: id).count == 1)
        }
    }

    /// The retries of a store made before the total was sharded (schema 2) still count against the cap.
    @Test func retriesKeptBeforeTheTotalWasShardedStillCount() async throws {
        try await TestDatabase.withSchema { url in
            let connection = try Connection(url)
            try connection.migrate(Array(PostgreSQLPushStore.migrations.prefix(2)))
            try connection.execute(
                """
                INSERT INTO registrations (domain, token, push_module, device_key, calls, wants_reads, collapse_key,
                    created_at, updated_at, fingerprint) VALUES ('example.org', 't', 'fcm', '\\x00', 'also', false,
                    '\\x00', 0, 0, 'f')
                """)
            for _ in 0..<2 {
                try connection.execute(
                    """
                    INSERT INTO retries (registration_id, summary, kind, attempts, next_at, deadline)
                    SELECT id, '{}', 'wake', 0, 0, 1 FROM registrations
                    """)
            }
            let store = try await PostgreSQLPushStore.open(
                url: url, componentSecret: TestDatabase.componentSecret, limits: changedLimits { $0.retries = 3 })
            let id = try #require(
                try await store.registrations(matching: RegistrationFilter(), limit: 1, offset: 0).first?.id)
            #expect(try await store.enqueueRetry(retry(id, nextAt: 5)) != nil)
            #expect(try await store.enqueueRetry(retry(id, nextAt: 6)) == nil)
        }
    }
}

/// A PostgreSQL of the test's own (to stop, restart or watch without disturbing the other suites' shared
/// one), stopped after `body`; its log's tail is recorded when `body` throws.
func withOwnPostgreSQLServer<T>(_ body: (PostgreSQLServer) async throws -> T) async throws -> T {
    let server = try PostgreSQLServer()
    try await server.start()
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        let log = await server.logContents(lastLines: 20)
        await server.stop()
        Issue.record("postgres log:\n\(log)")
        throw error
    }
}
