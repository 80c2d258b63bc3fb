import CSQLite

/// A failed SQLite call: the (extended) result code, SQLite's message and the SQL that failed.
///
/// Bound values are never part of the error, so tokens and keys cannot leak into logs through it.
public struct SQLiteError: Error, CustomStringConvertible, Equatable {
    /// The extended result code, e.g. `SQLITE_CONSTRAINT_UNIQUE` (2067).
    public var code: Int32
    public var message: String
    public var sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code, e.g. `SQLITE_CONSTRAINT` (19) for any constraint violation.
    public var primaryCode: Int32 { code & 0xFF }

    /// SQLite's words for the primary code, e.g. "database or disk is full".
    public var primaryDescription: String { String(cString: sqlite3_errstr(primaryCode)) }

    /// The file system or another process refuses for now (read-only, full, I/O, permission, a lock):
    /// the same call may work later.
    public var mayPass: Bool {
        [
            SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL,
            SQLITE_CANTOPEN, SQLITE_PROTOCOL,
        ].contains(primaryCode)
    }

    public var description: String {
        let location = sql.map { " in \"\($0)\"" } ?? ""
        return "SQLite error \(code): \(message)\(location)"
    }
}

extension SQLiteError {
    /// The error a connection reports for the call that just returned `code`.
    init(code: Int32, connection: OpaquePointer, sql: String?) {
        self.init(code: code, message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }
}
