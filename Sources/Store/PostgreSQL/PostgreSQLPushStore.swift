import Dispatch
import Foundation
public import PostgreSQL
import Sealing
import SQLCore
import SQLite
import Synchronization

/// The push store on PostgreSQL (`store` = `postgresql://…`): a small pool of connections; a call
/// that has one runs on a Dispatch thread, never on the cooperative pool (libpq blocks until the
/// server answers), and a call waiting for one holds no thread at all.
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
///
/// The instances sharing the store must share the component's secret: the notifications they send each
/// other through the database are signed with a key derived from it (PostgreSQLPushStore+Announcements).
public final class PostgreSQLPushStore: PushStore {
    public let limits: StoreLimits
    /// Where the store's connections go, without the password: for logs.
    public let target: String
    /// Why the store could not be reached at start (it is tried again on use), nil if it was.
    public let unavailableAtStart: StoreUnavailableError?

    let conninfo: String
    let reconnectInterval: Duration
    /// Signs and verifies the notifications between instances.
    let notificationKey: SharedKey
    private let statementTimeout: Duration
    /// How many calls run at once, each with a connection of its own on a Dispatch thread.
    private let connections: Int
    private let lock = NSLock()
    /// Guarded by `lock`.
    private nonisolated(unsafe) var idle: [Connection] = []
    private nonisolated(unsafe) var isMigrated = false
    private nonisolated(unsafe) var lastFailure: (error: StoreUnavailableError, at: ContinuousClock.Instant)?
    /// Calls waiting for a connection, in the order they were asked for. Waiting calls hold no
    /// thread: only a call that has its connection is on one.
    private nonisolated(unsafe) var waiting: [@Sendable () -> Void] = []
    private nonisolated(unsafe) var running = 0

    static let conflictAttempts = 3

    /// The exchanges with the server so far, counted by the connections: those of the transactions
    /// (`transaction`, and those in the background apart), what a publish and an answer cost, and
    /// those of every call (the due work's, a lookup's, the transactions' too).
    public struct RoundTrips: Sendable, Equatable {
        public var all = 0
        public var transactions = 0
        public var roundTrips = 0
        public var backgroundTransactions = 0
        public var backgroundRoundTrips = 0

        public init() {}
    }

    private let roundTripCounts = Mutex(RoundTrips())
    public var roundTrips: RoundTrips { roundTripCounts.withLock { $0 } }

    /// Connects and migrates. A server that cannot be reached leaves the store unavailable until it
    /// can (`unavailableAtStart`); a schema this build cannot use is `UnusableStoreError`.
    public init(
        url: String, componentSecret: String, limits: StoreLimits = StoreLimits(), connections: Int = 4,
        reconnectInterval: Duration = .seconds(1), statementTimeout: Duration = .seconds(30)
    ) throws(UnusableStoreError) {
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
            throw UnusableStoreError(reason: "a PostgreSQL store needs a postgresql:// URL")
        }
        conninfo = url
        notificationKey = SharedKey(secret: componentSecret, label: Self.notificationKeyLabel)
        self.limits = limits
        self.reconnectInterval = reconnectInterval
        self.statementTimeout = statementTimeout
        self.connections = max(1, connections)
        let connection: Connection
        do {
            connection = try Self.connect(
                url, migrating: true, statementTimeout: statementTimeout, notificationKey: notificationKey)
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

    /// `init` on a Dispatch thread: connecting and migrating block, and must not hold a thread of the
    /// cooperative pool.
    public static func open(
        url: String, componentSecret: String, limits: StoreLimits = StoreLimits(), connections: Int = 4,
        reconnectInterval: Duration = .seconds(1), statementTimeout: Duration = .seconds(30)
    ) async throws(UnusableStoreError) -> PostgreSQLPushStore {
        let opened = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(
                    returning: Result { () throws(UnusableStoreError) in
                        try PostgreSQLPushStore(
                            url: url, componentSecret: componentSecret, limits: limits, connections: connections,
                            reconnectInterval: reconnectInterval, statementTimeout: statementTimeout)
                    })
            }
        }
        return try opened.get()
    }

    /// The URL's host, port and database, for a log before any connection told them.
    private static func redactedTarget(_ url: String) -> String {
        guard let components = URLComponents(string: url) else { return "postgresql://(unparsable URL)" }
        return
            "\(components.user ?? "")@\(components.host ?? ""):\(components.port.map(String.init) ?? "")\(components.path)"
    }

    /// Runs `body` with a connection on a Dispatch thread once one is free. A transaction a failure
    /// left open is rolled back; a broken connection is dropped.
    @discardableResult
    func run<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit { continuation.resume(with: Result { try self.runHere(body) }) }
        }
    }

    private func submit(_ work: @escaping @Sendable () -> Void) {
        let ready = lock.withLock {
            waiting.append(work)
            return takeReady()
        }
        ready.forEach(start)
    }

    /// Under `lock`: the waiting calls, from the first, that may start now.
    private func takeReady() -> [@Sendable () -> Void] {
        var ready: [@Sendable () -> Void] = []
        while let next = waiting.first, running < connections {
            running += 1
            waiting.removeFirst()
            ready.append(next)
        }
        return ready
    }

    /// Runs a call on a thread of Dispatch's global queue (libpq blocks), then starts what its end lets
    /// start. Not a thread of its own (`BlockingWork`), nor is `open`: nothing else of the process
    /// waits on that queue any more, and its slowly growing pool bounds how many connections and
    /// statements all the stores of a process run at once. With a thread per call, the test suite's
    /// stores ran some eighty statements at once on two cores, and timed tests and connects failed.
    private func start(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async {
            work()
            let ready = self.lock.withLock {
                self.running -= 1
                return self.takeReady()
            }
            ready.forEach(self.start)
        }
    }

    /// On a Dispatch thread, as one of at most `connections` calls.
    private func runHere<T>(_ body: (Connection) throws -> T) throws -> T {
        let connection = try checkOut()
        let before = connection.roundTrips
        defer {
            let made = connection.roundTrips - before
            roundTripCounts.withLock { $0.all += made }
            checkIn(connection)
        }
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
            let connection = try Self.connect(
                conninfo, migrating: needsMigration, statementTimeout: statementTimeout,
                notificationKey: notificationKey)
            if needsMigration { lock.withLock { isMigrated = true } }
            lock.withLock { lastFailure = nil }
            return connection
        } catch {
            let unavailable = StoreUnavailableError(cause: error)
            lock.withLock { lastFailure = (unavailable, .now) }
            throw unavailable
        }
    }

    /// A connection of the pool, after migrating the database if asked. Past the migrations (which may
    /// take long on a big store), a statement that waits longer than `statementTimeout` (on a lock an
    /// operator's session holds, on a stalled disk) fails as a fault that may pass, answered `wait`,
    /// instead of holding a connection and its publish for ever. The session holds the key that signs
    /// its notifications (a parameter: no statement text shows it).
    private static func connect(
        _ conninfo: String, migrating: Bool, statementTimeout: Duration, notificationKey: SharedKey
    ) throws -> Connection {
        let connection = try Connection(conninfo)
        if migrating { try connection.migrate(Self.migrations) }
        try connection.execute("SET statement_timeout = \(statementTimeout.wholeMilliseconds)")
        try connection.execute(
            "SELECT set_config($1, $2, false)",
            [.text(notificationKeySetting), .text(notificationKeyValue(notificationKey))])
        return connection
    }

    /// The database's `clock_timestamp()`, the clock every instance sharing it agrees on.
    public func clockReading() async throws -> Timestamp? {
        try await run { connection in
            try connection.queryOne("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now")
                .decode("now", \.int64Value)
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

    /// `Connection.transaction` at READ COMMITTED, run again when it lost a deadlock or one of its
    /// prepared statements went stale (another instance migrated the schema).
    static func transaction<T>(_ connection: Connection, _ body: (Connection) throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try connection.transaction(isolation: "READ COMMITTED", body)
            } catch let error as PostgreSQLError
                where (error.isTransactionConflict || error.isStalePreparedStatement) && attempt < conflictAttempts
            {
                attempt += 1
            }
        }
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws
        -> T
    {
        try await run(inOneTransaction(body, inBackground: false))
    }

    public func transactionInBackground(
        _ body: @escaping @Sendable (any PushTransaction) throws -> Void,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        let transaction = inOneTransaction(body, inBackground: true)
        submit {
            do { try self.runHere(transaction) } catch { failed(error) }
        }
    }

    /// `body`'s steps as one transaction on a connection, its round trips counted.
    private func inOneTransaction<T>(
        _ body: @escaping @Sendable (any PushTransaction) throws -> T, inBackground: Bool
    ) -> @Sendable (Connection) throws -> T {
        let limits = limits
        return { connection in
            let before = connection.roundTrips
            defer {
                let made = connection.roundTrips - before
                self.roundTripCounts.withLock { counts in
                    if inBackground {
                        counts.backgroundTransactions += 1
                        counts.backgroundRoundTrips += made
                    } else {
                        counts.transactions += 1
                        counts.roundTrips += made
                    }
                }
            }
            return try Self.transaction(connection) { connection in
                try body(PostgreSQLPushTransaction(connection: connection, limits: limits))
            }
        }
    }
}

/// The steps of a publish on one connection, inside the transaction `PostgreSQLPushStore.transaction`
/// holds; each is in the PostgreSQLPushStore+<Concern>.swift file of its concern.
struct PostgreSQLPushTransaction: PushTransaction {
    let connection: Connection
    let limits: StoreLimits
    let readAhead = ReadAhead()

    /// What a step read with a statement it made anyway, for a later step of the same transaction.
    final class ReadAhead {
        /// The policy generation, read with a publish's registration (which the publish reads next).
        var policyGeneration: Int64?
    }
}

extension PostgreSQLError: TransientStoreFault {
    public var transientKind: String? { mayPass ? (sqlState ?? "connection") : nil }
}
