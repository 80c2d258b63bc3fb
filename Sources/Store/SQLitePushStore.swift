import Dispatch
import SQLite
import Sealing

/// The push store on SQLite: one connection, used only on a serial queue of its own.
///
/// Statements block (on a busy lock for up to 5 s, on a slow disk), so they run on the store's own
/// thread, never on a thread of the cooperative pool: a caller suspends until its statement is done.
/// Each call is one hop there and back (apush-bench: 10-25 µs against 2-9 µs on the caller's thread,
/// on a loaded 2-core machine), so a call does all of one step's reads and writes at once, in one
/// transaction where they must be atomic.
///
/// Tokens are stored (the upstream node must be known when a held push goes out) but never logged;
/// the file is created 0600. No message text is ever stored: held notices are metadata only.
///
/// A location that can never work (`UnusableStoreError`) fails at start. A file system that refuses
/// for now (read-only, full: `SQLiteError.mayPass`) leaves the store unavailable instead: every call
/// fails at once with `StoreUnavailableError`, and the first call `reopenInterval` after the last try
/// opens and migrates it, so the store comes back by itself when the disk does.
///
/// This file holds the connection; each section of `PushStore` is in its SQLitePushStore+<Concern>.swift.
public final class SQLitePushStore: PushStore {
    private enum Connection {
        case open(Database)
        case unavailable(StoreUnavailableError, triedAt: ContinuousClock.Instant)
    }

    /// Where the store lives. Its own type, so a caller chooses the location without the SQLite core.
    public enum Location: Sendable, Hashable {
        /// A private database that lives as long as the store.
        case memory
        /// A database file, created owner-only (0600) if missing.
        case file(path: String)

        var database: DatabaseLocation {
            switch self {
            case .memory: .memory
            case .file(let path): .file(path: path)
            }
        }
    }

    /// Touched only on `queue`, which is what makes the store `Sendable`.
    private nonisolated(unsafe) var connection: Connection
    private let queue = DispatchQueue(label: "apush.store")
    private let location: Location
    private let reopenInterval: Duration
    public let limits: StoreLimits
    /// Why the store could not be opened at start (it is opened on use later), nil if it was.
    public let unavailableAtStart: StoreUnavailableError?

    public init(
        _ location: Location, limits: StoreLimits = StoreLimits(),
        reopenInterval: Duration = .seconds(2)
    ) throws(UnusableStoreError) {
        try location.checkUsable()
        self.location = location
        self.limits = limits
        self.reopenInterval = reopenInterval
        do {
            connection = .open(try Self.open(location))
            unavailableAtStart = nil
        } catch let error as SQLiteError where error.mayPass {
            let unavailable = StoreUnavailableError(cause: error)
            unavailableAtStart = unavailable
            connection = .unavailable(unavailable, triedAt: .now)
        } catch {
            throw UnusableStoreError(reason: "\(error)")
        }
    }

    private static func open(_ location: Location) throws -> Database {
        let database = try Database(location.database)
        // For the migration that fills the fingerprints of registrations stored before they were kept.
        try database.defineFunction("token_fingerprint") { token in
            token.stringValue.map { .text(Fingerprint.of($0)) } ?? .null
        }
        try database.migrate(migrations)
        return database
    }

    /// Runs `body` with the connection on the store's queue. A transaction that a failure left open is
    /// rolled back, so the next call starts clean.
    func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try self.runHere(body) }) }
        }
    }

    /// `run` without waiting: a failure goes to `failed`.
    func runInBackground(
        _ body: @escaping @Sendable (Database) throws -> Void, failed: @escaping @Sendable (any Error) -> Void
    ) {
        queue.async {
            do { try self.runHere(body) } catch { failed(error) }
        }
    }

    /// On `queue` only.
    private func runHere<T>(_ body: (Database) throws -> T) throws -> T {
        let database = try openedDatabase()
        do {
            return try body(database)
        } catch {
            database.rollBackIfOpen()
            throw error
        }
    }

    /// The connection; an unavailable store is opened again (and migrated) at most once per
    /// `reopenInterval`, and in between fails at once, so a broken disk is not hammered. On `queue` only.
    private func openedDatabase() throws -> Database {
        switch connection {
        case .open(let database):
            return database
        case .unavailable(let error, let triedAt):
            let now = ContinuousClock.now
            guard triedAt.duration(to: now) >= reopenInterval else { throw error }
            do {
                let database = try Self.open(location)
                connection = .open(database)
                return database
            } catch {
                let error = StoreUnavailableError(cause: error)
                connection = .unavailable(error, triedAt: now)
                throw error
            }
        }
    }

    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws
        -> T
    {
        try await run(inOneTransaction(body))
    }

    /// Nil: the store is this process's alone, whose own work rings its loop.
    public func watchDueWork(_ announce: @escaping @Sendable (Timestamp) -> Void) -> (any StoreWatch)? { nil }

    /// Nothing: no other process shares the store.
    public func tellPeers(_ message: String) {}

    public func watchPeers(_ hear: @escaping @Sendable (String) -> Void) -> (any StoreWatch)? { nil }

    public func transactionInBackground(
        _ body: @escaping @Sendable (any PushTransaction) throws -> Void,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        runInBackground(inOneTransaction(body), failed: failed)
    }

    /// `body`'s steps as one transaction on the connection.
    private func inOneTransaction<T>(_ body: @escaping @Sendable (any PushTransaction) throws -> T)
        -> @Sendable (Database) throws -> T
    {
        let limits = limits
        return { database in
            try database.transaction { database in
                try body(SQLitePushTransaction(database: database, limits: limits))
            }
        }
    }

    /// A value or NULL.
    static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
    static func optional(_ number: Int64?) -> SQLValue { number.map(SQLValue.integer) ?? .null }
}

/// The steps of a publish on the store's connection, inside the transaction `SQLitePushStore.transaction`
/// holds; each is in the SQLitePushStore+<Concern>.swift file of its concern.
struct SQLitePushTransaction: PushTransaction {
    let database: Database
    let limits: StoreLimits
}
