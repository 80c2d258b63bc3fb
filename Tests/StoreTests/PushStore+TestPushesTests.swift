import SQLCore
import SQLite
import SQLiteTesting
import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct TestPushes {}
}

extension PushStoreTests.TestPushes {
    @Test(arguments: StoreKind.allCases)
    func anAccountsTestPushesAreCountedOverASlidingWindow(kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            func take(_ account: String = "alice@localhost", at: Timestamp) async throws -> Timestamp? {
                try await store.takeTestPush(account: account, at: at, window: 1_000, limit: 3)
            }
            for at in [Timestamp(100), 200, 300] {
                #expect(try await take(at: at) == nil)
            }
            // Full: the next is allowed when the oldest leaves the window; a refusal counts nothing.
            #expect(try await take(at: 400) == 1_100)
            #expect(try await take(at: 1_099) == 1_100)
            #expect(try await take("bob@localhost", at: 400) == nil, "another account has its own")
            #expect(try await take(at: 1_100) == nil)
            #expect(try await take(at: 1_101) == 1_200)
        }
    }

    @Test func usesBeforeTheWindowAreForgottenWhoeverAsks() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            for at in Timestamp(0)..<20 {
                _ = try await store.takeTestPush(
                    account: "user\(at)@localhost", at: at * 1_000, window: 5_000, limit: 3)
            }
            let database = try Database(.file(path: path))
            let kept = try database.queryOne("SELECT count(*) AS n FROM test_pushes")
            #expect(try kept.decode("n", \.int64Value) == 5)
        }
    }
}
