import Foundation
import PostgreSQL
import SQLCore
import SQLite
import SQLiteTesting
import Testing
import LocalServers

@testable import Store

/// Where a test's store lives: an in-memory database, a WAL file and PostgreSQL must behave the same.
enum StoreKind: String, CaseIterable, Sendable {
    case memory
    case file
    case postgresql

    /// The SQLite kinds, for what only SQLite has (its files, its pragmas).
    static let sqlite: [StoreKind] = [.memory, .file]
}

/// Runs `body` with a fresh store of `kind`; a file store's files are removed afterwards, a PostgreSQL
/// store's schema dropped.
func withStore<T>(
    _ kind: StoreKind, limits: StoreLimits = StoreLimits(), _ body: (any PushStore) async throws -> T
) async throws -> T {
    switch kind {
    case .memory, .file:
        return try await withSQLiteStore(kind, limits: limits, body)
    case .postgresql:
        return try await TestDatabase.withSchema { url in
            try await body(
                PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret, limits: limits))
        }
    }
}

/// The test process's PostgreSQL (`PostgreSQLServer.shared`); each store gets a schema of its own.
enum TestDatabase {
    /// The component secret every test store shares, as the instances of one component do.
    static let componentSecret = "test-component-secret"
    /// Runs `body` with the URL of a fresh, empty schema, dropped afterwards.
    static func withSchema<T>(_ body: (String) async throws -> T) async throws -> T {
        let url = try await PostgreSQLServer.shared.url
        let schema = "store_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        _ = try await offThePool { try Connection(url).execute("CREATE SCHEMA \(schema)") }
        do {
            let result = try await body(url + "?options=-c%20search_path%3D\(schema)")
            _ = try? await offThePool { try Connection(url).execute("DROP SCHEMA \(schema) CASCADE") }
            return result
        } catch {
            _ = try? await offThePool { try Connection(url).execute("DROP SCHEMA \(schema) CASCADE") }
            throw error
        }
    }

    /// Blocking libpq work on a Dispatch thread, never on the cooperative pool.
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result(catching: work)) }
        }
    }
}

func request(
    domain: String = "example.org", token: String = "token-1", pushModule: String = "fcm",
    account: String? = "alice@example.org", deviceKey: [UInt8] = [1, 2, 3],
    calls: CallsMode = .none, wantsReads: Bool = false
) -> RegistrationRequest {
    RegistrationRequest(
        domain: domain, token: token, pushModule: pushModule, account: account,
        deviceKey: deviceKey, calls: calls, wantsReads: wantsReads)
}

let collapseKeyA: [UInt8] = Array(repeating: 0xA1, count: 32)
let collapseKeyB: [UInt8] = Array(repeating: 0xB2, count: 32)

/// A registration to hang per-registration state on.
func registered(
    _ store: any PushStore, token: String = "token-1",
    account: String? = "alice@example.org"
) async throws -> Registration {
    try await store.register(request(token: token, account: account), freshCollapseKey: collapseKeyA, now: 1_000)
}

/// A chat state with an open window ending at `windowEnd`.
func openWindow(_ store: any PushStore, registrationID: Int64, chat: String, windowEnd: Timestamp?)
    async throws
{
    try await store.updateChat(registrationID: registrationID, chat: chat) { state in
        state = ChatState(registrationID: registrationID, chat: chat, count: 1, windowEndsAt: windowEnd)
    }
}

func retry(_ registrationID: Int64, nextAt: Timestamp, kind: String = "message") -> RetryItem {
    RetryItem(
        registrationID: registrationID, summary: #"{"kind":"\#(kind)"}"#, kind: kind,
        collapseChat: kind == "message" ? "bob@example.org" : nil, attempts: 1, nextAt: nextAt,
        deadline: nextAt + 60_000)
}

/// Claims every due item with a lease far ahead; returns their ids.
func claimIDs(_ store: any PushStore, at now: Timestamp, limit: Int = 10) async throws -> [Int64] {
    try await store.claimDueRetries(at: now, limit: limit, leaseUntil: 1_000_000).map(\.id)
}

/// Runs SQL on the store's own connection, in the engine's dialect.
func executeScript(_ store: any PushStore, sqlite: String, postgresql: String) async throws {
    switch store {
    case let store as SQLitePushStore:
        try await store.run { database in try database.executeScript(sqlite) }
    case let store as PostgreSQLPushStore:
        try await store.run { connection in try connection.executeScript(postgresql) }
    default:
        Issue.record("a store of an unknown engine")
    }
}

/// An error of the store's engine (not a decoding or capacity error of the store itself).
func isStoreError(_ error: any Error) -> Bool {
    error is SQLiteError || error is PostgreSQLError
}

/// A violated constraint (e.g. a row for a registration that does not exist), in either engine.
func isConstraintViolation(_ error: any Error) -> Bool {
    if let error = error as? SQLiteError { return error.primaryCode == 19 }  // SQLITE_CONSTRAINT
    if let error = error as? PostgreSQLError { return error.sqlState?.hasPrefix("23") == true }
    return false
}

/// The default limits changed by `change`.
func changedLimits(_ change: (inout StoreLimits) -> Void) -> StoreLimits {
    var limits = StoreLimits()
    change(&limits)
    return limits
}

/// The first column of every row `sql` returns, as text.
func firstColumn(_ store: any PushStore, _ sql: String) async throws -> [String] {
    let decode = { @Sendable (row: Row) throws -> String in try row.decode(row.columns[0], \.stringValue) }
    switch store {
    case let store as SQLitePushStore:
        return try await store.run { database in try database.query(sql).map(decode) }
    case let store as PostgreSQLPushStore:
        return try await store.run { connection in try connection.query(sql).map(decode) }
    default:
        Issue.record("a store of an unknown engine")
        return []
    }
}

/// The SQLite push store. The connection is tested here; each concern of the store has its nested suite
/// in SQLitePushStore+<Concern>Tests.swift, as the store has its code in SQLitePushStore+<Concern>.swift.

/// The PushStore contract, each concern in a file of its own, run on every engine (`StoreKind`).
@Suite struct PushStoreTests {}
