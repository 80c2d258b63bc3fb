import SQLCore
import SQLite
import SQLiteTesting
import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct UnknownNodes {}
}

extension PushStoreTests.UnknownNodes {
    @Test(arguments: StoreKind.allCases)
    func unknownNodeAnswersAreRecordedUpToTheLimitSinceATime(kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            for at in [Timestamp(100), 200, 300] {
                #expect(
                    try await store.recordUnknownNodeAnswer(at: at, since: 0, limit: 3, account: "a", accountLimit: 3))
            }
            #expect(
                try await !store.recordUnknownNodeAnswer(at: 400, since: 0, limit: 3, account: "b", accountLimit: 3))
            // Those before the window are forgotten, which makes room.
            #expect(
                try await store.recordUnknownNodeAnswer(at: 500, since: 150, limit: 3, account: "b", accountLimit: 3))
            #expect(
                try await !store.recordUnknownNodeAnswer(at: 600, since: 150, limit: 3, account: "c", accountLimit: 3))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func oneAccountSpendsOnlyItsOwnShareOfTheServersAnswers(kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            func record(_ account: String, at: Timestamp) async throws -> Bool {
                try await store.recordUnknownNodeAnswer(at: at, since: 0, limit: 5, account: account, accountLimit: 2)
            }
            #expect(try await record("alice@localhost", at: 1))
            #expect(try await record("alice@localhost", at: 2))
            for at in Timestamp(3)..<60 { #expect(try await !record("alice@localhost", at: at)) }
            #expect(try await record("bob@localhost", at: 61))
            #expect(try await record("bob@localhost", at: 62))
            #expect(try await record("carol@localhost", at: 63))
            // The server's budget still holds over every account.
            #expect(try await !record("dave@localhost", at: 64))
        }
    }

    @Test func unknownNodeAnswersKeepNoMoreThanTheLimit() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            for at in Timestamp(0)..<20 {
                _ = try await store.recordUnknownNodeAnswer(
                    at: at * 1_000, since: at * 1_000 - 5_000, limit: 3, account: "", accountLimit: 3)
            }
            let database = try Database(.file(path: path))
            let kept = try database.queryOne("SELECT count(*) AS n FROM unknown_node_answers")
            #expect(try kept.decode("n", \.int64Value) == 3)
        }
    }
}
