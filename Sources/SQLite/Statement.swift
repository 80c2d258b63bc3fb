public import SQLCore
import CSQLite

/// One prepared statement, owned by a `Database`'s cache and finalized when the cache lets it go.
final class Statement {
    let handle: OpaquePointer
    let sql: String

    /// Prepares exactly one statement. Trailing statements are refused rather than silently ignored;
    /// several statements at once go through `Database.executeScript(_:)`.
    init(sql: String, connection: OpaquePointer, persistent: Bool) throws(SQLiteError) {
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        var prepared: OpaquePointer?
        var remainder = ""
        let code = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            // The length includes the terminator, which spares SQLite a copy.
            let code = sqlite3_prepare_v3(connection, text, Int32(sql.utf8.count + 1), flags, &prepared, &tail)
            if let tail { remainder = String(cString: tail) }
            return code
        }
        guard code == SQLITE_OK else {
            throw SQLiteError(code: code, connection: connection, sql: sql)
        }
        guard let prepared else {
            throw SQLiteError(code: SQLITE_MISUSE, message: "no SQL statement", sql: sql)
        }
        guard !Self.containsStatement(remainder, connection: connection) else {
            sqlite3_finalize(prepared)
            throw SQLiteError(
                code: SQLITE_MISUSE, message: "more than one statement; use executeScript for several", sql: sql)
        }
        handle = prepared
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Whether `text` holds anything but whitespace and comments (or fails to parse).
    private static func containsStatement(_ text: String, connection: OpaquePointer) -> Bool {
        guard text.contains(where: { !$0.isWhitespace }) else { return false }
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v2(connection, text, -1, &prepared, nil)
        sqlite3_finalize(prepared)
        return code != SQLITE_OK || prepared != nil
    }

    func bind(_ values: [SQLValue]) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard values.count == expected else {
            throw SQLiteError(
                code: SQLITE_RANGE, message: "expected \(expected) bindings, got \(values.count)", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .null:
                code = sqlite3_bind_null(handle, index)
            case .integer(let integer):
                code = sqlite3_bind_int64(handle, index, integer)
            case .real(let real):
                code = sqlite3_bind_double(handle, index, real)
            case .text(let text):
                code = sqlite3_bind_text64(
                    handle, index, text, UInt64(text.utf8.count), CSQLite_transient(), UInt8(SQLITE_UTF8))
            case .blob(let bytes) where bytes.isEmpty:
                // A null pointer would bind NULL; an empty blob is a zero-length blob.
                code = sqlite3_bind_zeroblob(handle, index, 0)
            case .blob(let bytes):
                code = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob64(handle, index, buffer.baseAddress, UInt64(buffer.count), CSQLite_transient())
                }
            }
            guard code == SQLITE_OK else {
                throw SQLiteError(code: code, connection: sqlite3_db_handle(handle), sql: sql)
            }
        }
    }

    /// Advances one row: true while there is a row to read, false when done.
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw SQLiteError(code: code, connection: sqlite3_db_handle(handle), sql: sql)
        }
    }

    /// Makes the statement ready for its next use and ends any read it held open (which would block
    /// WAL checkpoints).
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// The result's column names, read once and again only after SQLite prepared the statement anew
    /// (a schema change may add or rename a column): a query reads them for every call.
    var columnNames: [String] {
        let prepared = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let names, names.prepared == prepared { return names.columns }
        let columns = (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
        names = (columns, prepared)
        return columns
    }

    private var names: (columns: [String], prepared: Int32)?

    func row(columns: [String]) -> Row {
        Row(columns: columns, values: (0..<Int32(columns.count)).map(value(at:)), sql: sql)
    }

    private func value(at column: Int32) -> SQLValue {
        sqlite3_column_value(handle, column).map(SQLValue.init) ?? .null
    }
}
