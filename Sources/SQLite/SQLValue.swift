import CSQLite

/// One SQLite value, in the five storage classes SQLite has.
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// SQLite has no boolean: true and false are stored as 1 and 0.
    public init(_ bool: Bool) {
        self = .integer(bool ? 1 : 0)
    }

    public var isNull: Bool { self == .null }

    /// SQLite's name of the storage class, e.g. for an error that must not show the value itself.
    public var storageClass: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }

    public var int64Value: Int64? {
        guard case .integer(let value) = self else { return nil }
        return value
    }

    /// Integers are accepted too: an expression over a REAL column may still yield an integer.
    public var doubleValue: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    public var stringValue: String? {
        guard case .text(let value) = self else { return nil }
        return value
    }

    public var bytesValue: [UInt8]? {
        guard case .blob(let value) = self else { return nil }
        return value
    }

    /// Any non-zero integer is true.
    public var boolValue: Bool? {
        int64Value.map { $0 != 0 }
    }
}

extension SQLValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self.init(value) }
}

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
