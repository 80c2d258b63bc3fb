public import SQLCore
import CSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

public enum DatabaseLocation: Sendable, Hashable {
    /// A private database that lives as long as its connection.
    case memory
    /// A database file, created owner-only (0600) if missing.
    case file(path: String)
}

/// A connection to one SQLite database.
///
/// Not `Sendable`: its owner guards it (a store uses it only on a serial queue of its own), so the
/// connection is opened without SQLite's own mutex. Prepared statements are cached per SQL text,
/// which suits an application whose SQL is a fixed set of strings.
public final class Database {
    private let handle: OpaquePointer
    private var statements: [String: Statement] = [:]
    /// A file's log is checkpointed on another thread (nil in memory, and for the checkpointer's own
    /// connection).
    private let checkpointer: WALCheckpointer?

    /// Opens (and for a file, creates) the database. Files use WAL, syncing as `synchronous` says, and
    /// their log is copied back in the background once it passes `checkpointPages` pages
    /// (`WALCheckpointer`); every connection enforces foreign keys and waits up to 5 s for another
    /// writer's lock.
    public convenience init(
        _ location: DatabaseLocation, synchronous: Synchronous = .full, checkpointPages: Int = 1000
    ) throws(SQLiteError) {
        let checkpointer: WALCheckpointer? =
            switch location {
            case .memory: nil
            case .file(let path): WALCheckpointer(path: path, threshold: checkpointPages)
            }
        try self.init(location, synchronous: synchronous, checkpointer: checkpointer)
    }

    /// The checkpointer's own connection to `path`: it commits nothing, so it needs no hook. A checkpoint
    /// syncs the database file whatever the mode.
    convenience init(checkpointerOf path: String) throws(SQLiteError) {
        try self.init(.file(path: path), synchronous: .normal, checkpointer: nil)
    }

    private init(_ location: DatabaseLocation, synchronous: Synchronous, checkpointer: WALCheckpointer?)
        throws(SQLiteError)
    {
        let path: String
        switch location {
        case .memory:
            path = ":memory:"
        case .file(let filePath):
            try Self.restrictToOwner(filePath)
            path = filePath
        }
        var connection: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite3_open_v2(path, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let message = String(cString: connection.map { sqlite3_errmsg($0) } ?? sqlite3_errstr(code))
            sqlite3_close_v2(connection)
            throw SQLiteError(code: code, message: "cannot open \(path): \(message)")
        }
        handle = connection
        self.checkpointer = checkpointer
        // From here a throw still runs deinit, which closes the handle.
        sqlite3_busy_timeout(handle, 5000)
        if case .file = location {
            let mode = try query("PRAGMA journal_mode = WAL").first?[0].stringValue
            guard mode == "wal" else {
                throw SQLiteError(code: SQLITE_ERROR, message: "WAL refused (journal mode \(mode ?? "unknown"))")
            }
            try executeScript(synchronous.pragma)
            if let checkpointer {
                // Replaces SQLite's automatic checkpoint; the pointer lives as long as the handle.
                sqlite3_wal_hook(
                    handle,
                    { context, connection, _, pages in
                        guard let context else { return SQLITE_OK }
                        let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue()
                        if checkpointer.committed(pages: Int(pages)) == .checkpointInline {
                            // RESTART copies the rest and makes the next commit write the log from its
                            // start: a writer that never pauses would otherwise never let a passive
                            // checkpoint catch up. The background pass has been waited out.
                            sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_RESTART, nil, nil)
                        }
                        return SQLITE_OK
                    }, Unmanaged.passUnretained(checkpointer).toOpaque())
            } else {
                try executeScript("PRAGMA wal_autocheckpoint = 0")
            }
        }
        try executeScript("PRAGMA foreign_keys = ON")
    }

    deinit {
        // Finalize every statement before closing; close_v2 would otherwise leave a zombie connection.
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Creates `path` with mode 0600 if missing and narrows it (and any -wal/-shm left beside it) to 0600.
    /// SQLite gives the -wal and -shm files it creates later the database file's mode.
    ///
    /// An existing file is narrowed by its path, never opened: POSIX locks belong to the process, and
    /// closing any descriptor of the file drops every one it holds there, among them the read lock that
    /// a connection already open keeps in WAL mode. Without that lock another process's SQLite, closing
    /// its last connection, would take the file as unused and delete the log under the live one.
    private static func restrictToOwner(_ path: String) throws(SQLiteError) {
        let created = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard created >= 0 || errno == EEXIST else { throw systemError("open", path) }
        // New, so no connection holds it yet.
        if created >= 0 { close(created) }
        guard chmod(path, 0o600) == 0 else { throw systemError("chmod", path) }
        for companion in [path + "-wal", path + "-shm"] where chmod(companion, 0o600) != 0 && errno != ENOENT {
            throw systemError("chmod", companion)
        }
    }

    /// The failed system call as the SQLite error it amounts to, so a read-only or full file system
    /// reads the same whether SQLite or this check met it first.
    private static func systemError(_ call: String, _ path: String) -> SQLiteError {
        let number = errno
        let code =
            switch number {
            case EROFS: SQLITE_READONLY
            case ENOSPC, EDQUOT: SQLITE_FULL
            case EACCES, EPERM: SQLITE_PERM
            default: SQLITE_CANTOPEN
            }
        return SQLiteError(code: code, message: "\(call) \(path): \(String(cString: strerror(number)))")
    }

    /// Told of every statement `execute` and `query` ran (its SQL and the time it took, binding and
    /// reading its rows included, failed or not): for a profiler that asks where a caller's time went.
    public var statementObserver: ((_ sql: String, _ took: Duration) -> Void)?

    /// Runs one statement, discarding any rows.
    public func execute(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) {
        try observed(sql) { () throws(SQLiteError) in
            let statement = try cachedStatement(sql)
            defer { statement.reset() }
            try statement.bind(bindings)
            while try statement.step() {}
        }
    }

    /// Runs one statement and returns all its rows.
    public func query(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> [Row] {
        try observed(sql) { () throws(SQLiteError) in
            let statement = try cachedStatement(sql)
            defer { statement.reset() }
            try statement.bind(bindings)
            var rows: [Row] = []
            // Read after a step, which prepares the statement anew if the schema changed (kept until then).
            while try statement.step() {
                rows.append(statement.row(columns: statement.columnNames))
            }
            return rows
        }
    }

    private func observed<T>(_ sql: String, _ run: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        guard let statementObserver else { return try run() }
        let clock = ContinuousClock()
        let start = clock.now
        defer { statementObserver(sql, start.duration(to: clock.now)) }
        return try run()
    }

    /// The first row of a statement that must return one (an aggregate, a PRAGMA, a kept total): none is
    /// an error rather than a default.
    public func queryOne(_ sql: String, _ bindings: [SQLValue] = []) throws -> Row {
        guard let row = try query(sql, bindings).first else { throw RowDecodingError(.noRow, sql: sql) }
        return row
    }

    /// Runs any number of `;`-separated statements without bindings and without caching, e.g. a schema.
    public func executeScript(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            throw SQLiteError(code: code, message: text, sql: sql)
        }
    }

    /// A PASSIVE checkpoint of the log: true if it ran (it may still leave frames a reader needs).
    func checkpointPassively() -> Bool {
        sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil) == SQLITE_OK
    }

    /// Checkpoints completed in the background so far, and a wait for one in progress: for tests.
    var backgroundCheckpoints: Int? { checkpointer?.completed }
    func settleCheckpoints() { checkpointer?.settle() }

    /// Makes `name(value)` callable from SQL on this connection, e.g. for a migration that fills a new
    /// column from an old one. Deterministic: the result depends on the argument alone.
    public func defineFunction(_ name: String, _ body: @escaping (SQLValue) -> SQLValue) throws(SQLiteError) {
        let function = Unmanaged.passRetained(SQLFunction(body)).toOpaque()
        // On failure SQLite calls the destructor itself, which releases `function`.
        let code = sqlite3_create_function_v2(
            handle, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, function,
            { context, _, arguments in
                guard let context, let argument = arguments?[0], let function = sqlite3_user_data(context) else {
                    return
                }
                let body = Unmanaged<SQLFunction>.fromOpaque(function).takeUnretainedValue().body
                body(SQLValue(argument)).setResult(of: context)
            }, nil, nil,
            { function in function.map { Unmanaged<SQLFunction>.fromOpaque($0).release() } })
        guard code == SQLITE_OK else { throw SQLiteError(code: code, connection: handle, sql: nil) }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// The schema version kept in the database header (`PRAGMA user_version`).
    public var userVersion: Int {
        get throws {
            Int(try queryOne("PRAGMA user_version").decode("user_version", \.int64Value))
        }
    }

    /// Runs `body` in a write transaction (`BEGIN IMMEDIATE`, so the write lock is taken up front and
    /// a busy database fails at the start rather than mid-way). Commits if `body` returns; otherwise rolls
    /// back and rethrows the first error, from `body` or from `COMMIT`.
    public func transaction<T>(_ body: (Database) throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body(self)
            try execute("COMMIT")
            return result
        } catch {
            rollBackIfOpen()
            throw error
        }
    }

    /// Ends a transaction that a failure left open, so the next statement does not run inside it. Some
    /// errors (e.g. SQLITE_FULL) already rolled back; a failed rollback must not mask the first error.
    public func rollBackIfOpen() {
        if isInTransaction {
            try? execute("ROLLBACK")
        }
    }

    func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        if let statement = statements[sql] {
            return statement
        }
        let statement = try Statement(sql: sql, connection: handle, persistent: true)
        statements[sql] = statement
        return statement
    }
}

/// The body of a function defined with `defineFunction`, kept alive by SQLite until the connection closes.
private final class SQLFunction {
    let body: (SQLValue) -> SQLValue

    init(_ body: @escaping (SQLValue) -> SQLValue) { self.body = body }
}

/// A connection must stay on its owner's executor.
@available(*, unavailable)
extension Database: Sendable {}
