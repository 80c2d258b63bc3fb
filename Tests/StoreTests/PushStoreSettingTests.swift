import SQLiteTesting
import Testing

@testable import Store

@Suite struct PushStoreSettingTests {
    @Test(arguments: [
        ("postgresql://apush:s3cret@db.example.org:5432/apush", "postgresql://apush:***@db.example.org:5432/apush"),
        ("postgres://apush:p%40ss@db/apush?sslmode=require", "postgres://apush:***@db/apush?sslmode=require"),
        (
            "postgresql://apush@db/apush?password=s3cret&sslmode=require",
            "postgresql://apush@db/apush?password=***&sslmode=require"
        ),
        ("postgresql://db/apush", "postgresql://db/apush"),
        ("/var/lib/apush/apush.sqlite", "/var/lib/apush/apush.sqlite"),
    ])
    func aPasswordIsNeverShown(setting: String, shown: String) {
        #expect(PushStoreSetting.redacted(setting) == shown)
    }

    @Test func aURLOpensPostgreSQLAndAPathSQLite() async throws {
        try await TestDatabase.withSchema { url in
            let (store, unavailable) = try await PushStoreSetting.open(
                url, limits: StoreLimits(), componentSecret: TestDatabase.componentSecret)
            #expect(store is PostgreSQLPushStore && unavailable == nil)
        }
        try await withTemporaryDatabasePath { path in
            let (store, unavailable) = try await PushStoreSetting.open(
                path, limits: StoreLimits(), componentSecret: TestDatabase.componentSecret)
            #expect(store is SQLitePushStore && unavailable == nil)
        }
    }

    @Test func theLimitsReachTheStore() async throws {
        try await TestDatabase.withSchema { url in
            let (store, _) = try await PushStoreSetting.open(
                url, limits: StoreLimits(registrations: 1), componentSecret: TestDatabase.componentSecret)
            _ = try await registered(store)
            await #expect(throws: StoreCapacityError(collection: "registrations", limit: 1)) {
                try await registered(store, token: "t2", account: "bob@example.org")
            }
        }
    }
}
