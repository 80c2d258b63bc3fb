/// One result row: values addressed by column name (or position).
public struct Row: Sendable, Hashable {
    /// Column names in result order; shared by every row of one query.
    public let columns: [String]
    public let values: [SQLValue]

    public init(columns: [String], values: [SQLValue]) {
        precondition(columns.count == values.count, "a row needs one value per column")
        self.columns = columns
        self.values = values
    }

    /// The value of `column`. Asking for a column the query does not return is a programming error and traps,
    /// rather than reading as NULL and hiding a typo.
    public subscript(_ column: String) -> SQLValue {
        guard let index = columns.firstIndex(of: column) else {
            preconditionFailure("no column \"\(column)\" in \(columns)")
        }
        return values[index]
    }

    public subscript(_ index: Int) -> SQLValue {
        values[index]
    }

    public func contains(_ column: String) -> Bool {
        columns.contains(column)
    }

    public func int(_ column: String) -> Int64? { self[column].int64Value }
    public func double(_ column: String) -> Double? { self[column].doubleValue }
    public func string(_ column: String) -> String? { self[column].stringValue }
    public func blob(_ column: String) -> [UInt8]? { self[column].bytesValue }
    public func bool(_ column: String) -> Bool? { self[column].boolValue }

    /// A NOT NULL column read as `T` (e.g. `try row.decode("id", \.int64Value)`): NULL or a value of another
    /// type throws, so a damaged row is never read as a default.
    public func decode<T>(_ column: String, _ read: (SQLValue) -> T?) throws(RowDecodingError) -> T {
        guard let value = read(self[column]) else { throw RowDecodingError(column: column, value: self[column]) }
        return value
    }

    /// A nullable column: NULL is nil, a value of another type throws.
    public func decodeIfPresent<T>(_ column: String, _ read: (SQLValue) -> T?) throws(RowDecodingError) -> T? {
        let value = self[column]
        guard !value.isNull else { return nil }
        guard let decoded = read(value) else { throw RowDecodingError(column: column, value: value) }
        return decoded
    }
}

/// A stored value that does not decode as its column's type. Names the column and the storage class only,
/// never the value (it may be a token).
public struct RowDecodingError: Error, Equatable, CustomStringConvertible {
    public var column: String
    public var storageClass: String

    public init(column: String, value: SQLValue) {
        self.column = column
        storageClass = switch value {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }

    public var description: String { "column \(column) holds an unexpected \(storageClass)" }
}
