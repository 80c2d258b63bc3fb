import Dispatch
import Foundation
public import PostgreSQL

/// The push store on PostgreSQL (`store` = `postgresql://…`): a small pool of connections, each call
/// on a thread of a queue of the store's own, never on the cooperative pool (libpq blocks until the
/// server answers).
///
/// Transactions run at READ COMMITTED; each read-modify-write step takes the row lock it needs (the
/// registration's for its chats, the kept total for a cap) or is one atomic statement, so steps on
/// several connections at once never race. A deadlock between two of them runs the losing
/// transaction again (at most `conflictAttempts` times in all).
///
/// While the server is away (restarting, failing over) a call fails at once with an error that may
/// pass (`StoreUnavailableError` or a lost connection's `PostgreSQLError`), so a publish is answered
/// `wait`; a broken connection is dropped and a new one made on a later call, at most one attempt per
/// `reconnectInterval`. The URL's password is never logged (`target` names the server without it).
public final class PostgreSQLPushStore: PushStore, @unchecked Sendable {
    public let limits: StoreLimits
    /// Where the store's connections go, without the password: for logs.
    public let target: String
    /// Why the store could not be reached at start (it is tried again on use), nil if it was.
    public let unavailableAtStart: StoreUnavailableError?

    private let conninfo: String
    private let reconnectInterval: Duration
    /// Runs every call; a background transaction is a barrier, so it runs after every call asked for
    /// before it and before every call asked for after it.
    private let queue = DispatchQueue(label: "apush.store.postgresql", attributes: .concurrent)
    private let slots: DispatchSemaphore
    private let lock = NSLock()
    /// Guarded by `lock`.
    private nonisolated(unsafe) var idle: [Connection] = []
    private nonisolated(unsafe) var isMigrated = false
    private nonisolated(unsafe) var lastFailure: (error: StoreUnavailableError, at: ContinuousClock.Instant)?

    static let conflictAttempts = 3

    /// Connects and migrates. A server that cannot be reached leaves the store unavailable until it
    /// can (`unavailableAtStart`); a schema this build cannot use is `UnusableStoreError`.
    public init(
        url: String, limits: StoreLimits = StoreLimits(), connections: Int = 4,
        reconnectInterval: Duration = .seconds(1)
    ) throws(UnusableStoreError) {
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
            throw UnusableStoreError(reason: "a PostgreSQL store needs a postgresql:// URL")
        }
        conninfo = url
        self.limits = limits
        self.reconnectInterval = reconnectInterval
        slots = DispatchSemaphore(value: max(1, connections))
        let connection: Connection
        do {
            connection = try Connection(url)
            try connection.migrate(Self.migrations)
        } catch let error as PostgreSQLError where error.mayPass {
            let unavailable = StoreUnavailableError(cause: error)
            unavailableAtStart = unavailable
            target = Self.redactedTarget(url)
            lastFailure = (unavailable, .now)
            return
        } catch {
            throw UnusableStoreError(reason: "\(error)")
        }
        target = connection.target
        unavailableAtStart = nil
        isMigrated = true
        idle = [connection]
    }

    /// The URL's host, port and database, for a log before any connection told them.
    private static func redactedTarget(_ url: String) -> String {
        guard let components = URLComponents(string: url) else { return "postgresql://(unparsable URL)" }
        return
            "\(components.user ?? "")@\(components.host ?? ""):\(components.port.map(String.init) ?? "")\(components.path)"
    }

    /// Runs `body` with a connection on the store's queue. A transaction a failure left open is rolled
    /// back; a broken connection is dropped.
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try self.runHere(body) }) }
        }
    }

    /// `run` without waiting, ordered between the calls before and after it; a failure goes to `failed`.
    private func runInBackground(
        _ body: @escaping @Sendable (Connection) throws -> Void, failed: @escaping @Sendable (any Error) -> Void
    ) {
        queue.async(flags: .barrier) {
            do { try self.runHere(body) } catch { failed(error) }
        }
    }

    /// On `queue` only.
    private func runHere<T>(_ body: (Connection) throws -> T) throws -> T {
        slots.wait()
        defer { slots.signal() }
        let connection = try checkOut()
        defer { checkIn(connection) }
        do {
            return try body(connection)
        } catch {
            connection.rollBackIfOpen()
            throw error
        }
    }

    /// An idle connection, or a new one (migrating the database if that never succeeded); while the
    /// server is unreachable, a new attempt at most once per `reconnectInterval`.
    private func checkOut() throws -> Connection {
        let (reusable, needsMigration): (Connection?, Bool) = try lock.withLock {
            if let connection = idle.popLast() { return (connection, false) }
            if let lastFailure, lastFailure.at.duration(to: .now) < reconnectInterval { throw lastFailure.error }
            return (nil, !isMigrated)
        }
        if let reusable { return reusable }
        do {
            let connection = try Connection(conninfo)
            if needsMigration {
                try connection.migrate(Self.migrations)
                lock.withLock { isMigrated = true }
            }
            lock.withLock { lastFailure = nil }
            return connection
        } catch {
            let unavailable = StoreUnavailableError(cause: error)
            lock.withLock { lastFailure = (unavailable, .now) }
            throw unavailable
        }
    }

    /// A broken connection is dropped with every idle one: the server it lost most likely dropped
    /// them all (a restart), and each would fail its next call.
    private func checkIn(_ connection: Connection) {
        lock.withLock {
            if connection.isBroken {
                idle.removeAll()
            } else {
                idle.append(connection)
            }
        }
    }

    /// `Connection.transaction` at READ COMMITTED, run again when it lost a deadlock.
    static func transaction<T>(_ connection: Connection, _ body: (Connection) throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try connection.transaction(isolation: "READ COMMITTED", body)
            } catch let error as PostgreSQLError where error.isTransactionConflict && attempt < conflictAttempts {
                attempt += 1
            }
        }
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws
        -> T
    {
        let limits = limits
        return try await run { connection in
            try Self.transaction(connection) { connection in
                try body(PostgreSQLPushTransaction(connection: connection, limits: limits))
            }
        }
    }

    public func transactionInBackground(
        _ body: @escaping @Sendable (any PushTransaction) throws -> Void,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        let limits = limits
        runInBackground(
            { connection in
                try Self.transaction(connection) { connection in
                    try body(PostgreSQLPushTransaction(connection: connection, limits: limits))
                }
            }, failed: failed)
    }
}

/// The steps of a publish on one connection, inside the transaction `PostgreSQLPushStore.transaction`
/// holds; each is in the PostgreSQLPushStore+<Concern>.swift file of its concern.
struct PostgreSQLPushTransaction: PushTransaction {
    let connection: Connection
    let limits: StoreLimits
}

extension PostgreSQLError: TransientStoreFault {
    public var transientKind: String? { mayPass ? (sqlState ?? "connection") : nil }
}
