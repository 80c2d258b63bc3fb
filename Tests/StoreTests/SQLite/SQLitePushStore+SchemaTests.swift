import SQLCore
import SQLite
import SQLiteTesting
import Sealing
import Testing

@testable import Store

extension SQLitePushStoreTests {
    @Suite struct Schema {
        /// A v1 database: Alice's registration with a chat, a sighting and a retry; a stock registration with
        /// a call and a retry; a third, removed, so the highest id ever handed out is 3; one tombstone.
        private func writeVersionOne(at path: String) throws {
            let database = try Database(.file(path: path))
            try database.migrate(Array(SQLitePushStore.migrations.prefix(1)))
            try database.executeScript(
                """
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
    }
}

extension SQLitePushStoreTests.Schema {
    @Test func versionTwoKeepsEveryRowAndEveryChildRow() async throws {
        try await withTemporaryDatabasePath { path in
            try writeVersionOne(at: path)
            let store = try SQLitePushStore(.file(path: path))

            let alice = try #require(try await store.registration(id: 1))
            #expect(alice.account == "alice@example.org" && alice.token == "shared" && alice.calls == .also)
            #expect(alice.deviceKey == [0x01] && alice.collapseKey == [0xA1] && alice.pushCount == 4)
            #expect(alice.lastPushAt == 150 && alice.wantsReads)
            #expect(alice.lastUsedAt == 150, "its last push, the later of its change and its push")
            let stock = try #require(try await store.registration(id: 2))
            #expect(stock.account == nil && stock.token == "stock")
            #expect(stock.lastUsedAt == 200)
            #expect(try await store.chats(registrationID: 1).map(\.count) == [2])
            #expect(try await !store.firstSighting(registrationID: 1, key: "m/1", at: 130, since: 0))
            #expect(try await store.takeCall(registrationID: 2, sid: "c1", chat: nil)?.media == ["audio"])
            #expect(
                try await store.claimDueRetries(at: 5_000, limit: 10, leaseUntil: 5_000).map(\.registrationID) == [
                    1, 2,
                ])
            #expect(try await store.isBuried(token: "dead", pushModule: "fcm", account: "bob@example.org", since: 0))

            // The highest id ever handed out is kept: a removed registration's id is not reused.
            let bob = try await store.register(
                RegistrationRequest(
                    domain: "example.org", token: "shared", pushModule: "fcm",
                    account: "bob@example.org", deviceKey: [9], calls: .none, wantsReads: false),
                freshCollapseKey: collapseKeyB, now: 500)
            #expect(bob.id == 4)
            #expect(try await store.registration(id: 1) == alice)

            // Foreign keys are on again: removing Alice's registration takes her chat and retry with it.
            try await store.retire(registrationID: 1, at: 600)
            #expect(try await store.chats(registrationID: 1).isEmpty)
            #expect(
                try await store.claimDueRetries(at: 5_000, limit: 10, leaseUntil: 5_000).map(\.registrationID) == [2])
            try await store.run { database in
                #expect(try database.userVersion == SQLitePushStore.migrations.last?.version)
                #expect(try database.query("PRAGMA foreign_key_check").isEmpty)
                let sizes = try database.query("SELECT name, count FROM sizes ORDER BY name")
                    .map { row in try "\(row.decode("name", \.stringValue))=\(row.decode("count", \.int64Value))" }
                #expect(
                    sizes == [
                        "registrations=2", "registrations-without-account=1", "registrations@example.org=2",
                        "retries=1",
                    ])
            }
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

    /// A database of the version before fingerprints were kept: its registrations gain theirs in the
    /// migration, and an operator finds each by it (one token under two accounts has one fingerprint).
    @Test func aVersionThreeDatabaseGainsTheFingerprintsOfItsRegistrations() async throws {
        try await withTemporaryDatabasePath { path in
            let old = try Database(.file(path: path))
            try old.migrate(Array(SQLitePushStore.migrations.prefix(3)))
            try old.executeScript(
                """
                INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                    collapse_key, created_at, updated_at)
                VALUES ('example.org', 'shared', 'fcm', 'alice@example.org', x'01', 'none', 0, x'A1', 100, 100),
                       ('example.org', 'shared', 'fcm', 'bob@example.org', x'02', 'none', 0, x'B2', 200, 200),
                       ('example.org', 'own', 'apns', NULL, x'03', 'only', 0, x'C3', 300, 300);
                """)
            let store = try SQLitePushStore(.file(path: path))
            func found(_ token: String) async throws -> [String?] {
                try await store.registrations(
                    matching: RegistrationFilter(fingerprint: Fingerprint.of(token)), limit: 10, offset: 0
                ).map(\.account)
            }
            #expect(try await found("shared") == ["alice@example.org", "bob@example.org"])
            #expect(try await found("own") == [nil])
            #expect(try await found("none").isEmpty)
            #expect(try old.userVersion == SQLitePushStore.migrations.last?.version)
        }
    }
}
