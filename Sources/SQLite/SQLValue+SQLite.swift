import CSQLite
import SQLCore

// SQLite's own form of a value: a column's or an argument's, and a function's result.
extension SQLValue {
    /// A column's or a function argument's value. The connection runs without SQLite's mutex
    /// (multi-thread mode), where a column's unprotected value reads like a protected one.
    init(_ value: OpaquePointer) {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            self = .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT:
            self = .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            // The pointer first, then the length: that order avoids a conversion changing the length.
            guard let text = sqlite3_value_text(value) else {
                self = .text("")
                return
            }
            let count = Int(sqlite3_value_bytes(value))
            self = .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else {
                self = .blob([])
                return
            }
            self = .blob(Array(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value)))))
        default:
            self = .null
        }
    }

    /// Makes this value the result of a SQL function call.
    func setResult(of context: OpaquePointer) {
        switch self {
        case .null:
            sqlite3_result_null(context)
        case .integer(let integer):
            sqlite3_result_int64(context, integer)
        case .real(let real):
            sqlite3_result_double(context, real)
        case .text(let text):
            sqlite3_result_text64(context, text, UInt64(text.utf8.count), CSQLite_transient(), UInt8(SQLITE_UTF8))
        case .blob(let bytes) where bytes.isEmpty:
            // A null pointer would give NULL; an empty blob is a zero-length blob.
            sqlite3_result_zeroblob(context, 0)
        case .blob(let bytes):
            bytes.withUnsafeBytes { buffer in
                sqlite3_result_blob64(context, buffer.baseAddress, UInt64(buffer.count), CSQLite_transient())
            }
        }
    }
}
