import Dispatch
internal import SQLCore
public import SQLite
import Sealing
import Synchronization

/// The push store on SQLite: one connection, used only on a serial queue of its own.
///
/// Statements block (on a busy lock for up to 5 s, on a slow disk), so they run on the store's own
/// thread, never on a thread of the cooperative pool: a caller suspends until its statement is done.
/// Each call is one hop there and back (apush-bench: 10-25 µs against 2-9 µs on the caller's thread,
/// on a loaded 2-core machine), so a call does all of one step's reads and writes at once, in one
/// transaction where they must be atomic.
///
/// Transactions that wait while the thread is busy are committed together (a group commit: a commit
/// on a WAL file is a write per page, the largest cost of a publish), each in a savepoint of its own so
/// that one that fails is rolled back alone; each caller hears of its own only once all have
/// committed. Work nobody waits for (a push's answer recorded) waits up to `backgroundDelay` to share
/// the next transaction's commit.
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
    /// Transactions waiting for `queue`, and whether a drain of them is on its way there.
    private let waiting = Mutex(Waiting())
    /// How long work nobody waits for may wait to share another transaction's commit.
    static let backgroundDelay = DispatchTimeInterval.milliseconds(2)
    private let location: Location
    private let synchronous: Synchronous
    private let reopenInterval: Duration
    private let statementObserver: (@Sendable (_ sql: String, _ took: Duration) -> Void)?
    public let limits: StoreLimits
    /// Why the store could not be opened at start (it is opened on use later), nil if it was.
    public let unavailableAtStart: StoreUnavailableError?

    /// A file's commits wait for the disk as `synchronous` says (`full`: a commit survives a power loss).
    /// `statementObserver` hears of every statement the store runs and its time, on the store's thread
    /// (`apush-bench statements`).
    public init(
        _ location: Location, limits: StoreLimits = StoreLimits(), synchronous: Synchronous = .full,
        reopenInterval: Duration = .seconds(2),
        statementObserver: (@Sendable (_ sql: String, _ took: Duration) -> Void)? = nil
    ) throws(UnusableStoreError) {
        try location.checkUsable()
        self.location = location
        self.synchronous = synchronous
        self.limits = limits
        self.reopenInterval = reopenInterval
        self.statementObserver = statementObserver
        do {
            connection = .open(try Self.open(location, synchronous: synchronous, statementObserver: statementObserver))
            unavailableAtStart = nil
        } catch let error as SQLiteError where error.mayPass {
            let unavailable = StoreUnavailableError(cause: error)
            unavailableAtStart = unavailable
            connection = .unavailable(unavailable, triedAt: .now)
        } catch {
            throw UnusableStoreError(reason: "\(error)")
        }
    }

    private static func open(
        _ location: Location, synchronous: Synchronous, statementObserver: (@Sendable (String, Duration) -> Void)?
    ) throws -> Database {
        let database = try Database(location.database, synchronous: synchronous)
        database.statementObserver = statementObserver
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

    /// On `queue` only. Transactions that were waiting run first: every call runs after those made
    /// before it.
    private func runHere<T>(_ body: (Database) throws -> T) throws -> T {
        commitWaiting()
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
                let database = try Self.open(location, synchronous: synchronous, statementObserver: statementObserver)
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
        try await withCheckedThrowingContinuation { continuation in
            enqueue(
                waitingTransaction(
                    body, committed: { continuation.resume(returning: $0) },
                    failed: { continuation.resume(throwing: $0) }),
                urgent: true)
        }
    }

    /// The body's value once it has run, on the store's thread; its commit, shared with the other
    /// transactions of its drain, settles `commit` after.
    public func transactionDecided<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T)
        async throws -> Decided<T>
    {
        try await withCheckedThrowingContinuation { continuation in
            let decision = Decision(continuation)
            enqueue(
                waitingTransaction(
                    { transaction in decision.decided(try body(transaction)) },
                    committed: { _ in decision.commit.commit() }, failed: decision.failed),
                urgent: true)
        }
    }

    /// A caller of `transactionDecided`: told the body's value once it has run, then the commit's fate.
    private final class Decision<T: Sendable>: Sendable {
        private let caller: Mutex<CheckedContinuation<Decided<T>, any Error>?>
        let commit = PendingCommit()

        init(_ caller: CheckedContinuation<Decided<T>, any Error>) { self.caller = Mutex(caller) }

        func decided(_ value: T) { takeCaller()?.resume(returning: Decided(value, commit: commit)) }

        /// Before the body returned (it threw, or the transaction never began), the caller hears it;
        /// after, the commit does.
        func failed(_ error: any Error) {
            if let caller = takeCaller() { caller.resume(throwing: error) } else { commit.fail(error) }
        }

        private func takeCaller() -> CheckedContinuation<Decided<T>, any Error>? {
            caller.withLock { caller in
                defer { caller = nil }
                return caller
            }
        }
    }

    /// Nil: the store is this process's alone, whose own work rings its loop.
    public func watchDueWork(
        _ announce: @escaping @Sendable (Timestamp) -> Void, rejected: @escaping @Sendable () -> Void
    ) -> (any StoreWatch)? { nil }

    /// Nothing: no other process shares the store.
    public func tellPeers(_ message: String) {}

    public func watchPeers(
        _ hear: @escaping @Sendable (String) -> Void, listening: @escaping @Sendable () -> Void,
        rejected: @escaping @Sendable () -> Void
    ) -> (any StoreWatch)? { nil }

    /// Nil: the store is this process's alone, and its clock is the process's.
    public func clockReading() -> Timestamp? { nil }

    public func transactionInBackground(
        _ body: @escaping @Sendable (any PushTransaction) throws -> Void,
        failed: @escaping @Sendable (any Error) -> Void
    ) {
        enqueue(waitingTransaction(body, committed: { _ in }, failed: failed), urgent: false)
    }

    /// `body` on the store's connection, for the next drain; `committed` gets its value once the
    /// transaction holding it has committed, `failed` its error otherwise.
    private func waitingTransaction<T: Sendable>(
        _ body: @escaping @Sendable (any PushTransaction) throws -> T,
        committed: @escaping @Sendable (T) -> Void, failed: @escaping @Sendable (any Error) -> Void
    ) -> WaitingTransaction {
        let limits = limits
        return WaitingTransaction(
            run: { database in
                let value = try body(SQLitePushTransaction(database: database, limits: limits))
                return { committed(value) }
            },
            fail: failed)
    }

    /// One transaction's body and what to do once its fate is known.
    private struct WaitingTransaction: Sendable {
        /// Runs the body and returns what tells its caller, called once it has committed.
        let run: @Sendable (Database) throws -> @Sendable () -> Void
        let fail: @Sendable (any Error) -> Void
    }

    private struct Waiting {
        var transactions: [WaitingTransaction] = []
        /// A drain is on its way to `queue`: at once (`urgent`), or after `backgroundDelay`.
        var drainQueued: Drain?

        enum Drain { case soon, later }
    }

    /// Transactions waiting for the store's thread: for tests.
    var transactionsWaiting: Int { waiting.withLock { $0.transactions.count } }

    /// Adds a transaction to those waiting and sends a drain to the queue unless one is on its way: at
    /// once for a caller who waits, after `backgroundDelay` for work nobody waits for.
    private func enqueue(_ transaction: WaitingTransaction, urgent: Bool) {
        let send: Waiting.Drain? = waiting.withLock { waiting in
            waiting.transactions.append(transaction)
            let wanted: Waiting.Drain = urgent ? .soon : .later
            guard waiting.drainQueued != .soon, waiting.drainQueued != wanted else { return nil }
            waiting.drainQueued = wanted
            return wanted
        }
        switch send {
        case .soon: queue.async { self.commitWaiting() }
        case .later: queue.asyncAfter(deadline: .now() + Self.backgroundDelay) { self.commitWaiting() }
        case nil: break
        }
    }

    /// Runs every waiting transaction in one transaction of the connection (each in a savepoint when
    /// there are several), commits, and only then tells each caller. One that fails is rolled back to
    /// its savepoint and its caller hears its error; a failure that ends the whole transaction (a full
    /// disk, a failed commit) fails every one of them. On `queue` only.
    private func commitWaiting() {
        let batch = waiting.withLock { waiting in
            waiting.drainQueued = nil
            defer { waiting.transactions = [] }
            return waiting.transactions
        }
        guard !batch.isEmpty else { return }
        let database: Database
        do {
            database = try openedDatabase()
            try database.execute("BEGIN IMMEDIATE")
        } catch {
            for transaction in batch { transaction.fail(error) }
            return
        }
        let isolated = batch.count > 1
        var committed: [@Sendable () -> Void] = []
        var refused: [(WaitingTransaction, any Error)] = []
        do {
            for transaction in batch {
                do {
                    if isolated { try database.execute("SAVEPOINT waiting_transaction") }
                    let tell = try transaction.run(database)
                    if isolated { try database.execute("RELEASE waiting_transaction") }
                    committed.append(tell)
                } catch  where isolated && database.isInTransaction {
                    try database.execute("ROLLBACK TO waiting_transaction")
                    try database.execute("RELEASE waiting_transaction")
                    refused.append((transaction, error))
                }
            }
            try database.execute("COMMIT")
        } catch {
            database.rollBackIfOpen()
            for transaction in batch { transaction.fail(error) }
            return
        }
        for tell in committed { tell() }
        for (transaction, error) in refused { transaction.fail(error) }
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
