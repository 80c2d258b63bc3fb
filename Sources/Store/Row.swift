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
}
