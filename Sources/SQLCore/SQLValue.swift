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
