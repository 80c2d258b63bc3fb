/// One result row: values addressed by column name (or position), and the statement that returned it.
///
/// Reading a column decodes it or throws: a value of another type, a NULL where one is required, or a
/// column the statement does not return is a `RowDecodingError` naming the column and the statement,
/// never a default that would hide a damaged row.
public struct Row: Sendable, Hashable {
    /// Column names in result order; shared by every row of one query.
    public let columns: [String]
    public let values: [SQLValue]
    /// The statement that returned the row, which decoding errors name (nil for a row built by hand).
    public let sql: String?

    public init(columns: [String], values: [SQLValue], sql: String? = nil) {
        precondition(columns.count == values.count, "a row needs one value per column")
        self.columns = columns
        self.values = values
        self.sql = sql
    }

    public subscript(_ index: Int) -> SQLValue {
        values[index]
    }

    public func contains(_ column: String) -> Bool {
        columns.contains(column)
    }

    /// The value of `column` (the first, if the statement names two alike), whatever its type.
    public func value(_ column: String) throws(RowDecodingError) -> SQLValue {
        guard let index = columns.firstIndex(of: column) else {
            throw RowDecodingError(.missingColumn(column), sql: sql)
        }
        return values[index]
    }

    /// A NOT NULL column read as `T` (e.g. `try row.decode("id", \.int64Value)`): NULL or a value of another
    /// type throws.
    public func decode<T>(_ column: String, _ read: (SQLValue) -> T?) throws(RowDecodingError) -> T {
        let value = try value(column)
        guard let decoded = read(value) else { throw mismatch(column, value) }
        return decoded
    }

    /// A nullable column: NULL is nil, a value of another type throws.
    public func decodeIfPresent<T>(_ column: String, _ read: (SQLValue) -> T?) throws(RowDecodingError) -> T? {
        let value = try value(column)
        guard !value.isNull else { return nil }
        guard let decoded = read(value) else { throw mismatch(column, value) }
        return decoded
    }

    /// The error for a value of the column's type that means nothing known (an unknown enum case, a
    /// document that does not parse), for the caller that reads it further.
    public func unknownValue(_ column: String) -> RowDecodingError {
        do {
            let storageClass = try value(column).storageClass
            return RowDecodingError(.unknownValue(column: column, storageClass: storageClass), sql: sql)
        } catch {
            return error
        }
    }

    private func mismatch(_ column: String, _ value: SQLValue) -> RowDecodingError {
        RowDecodingError(.mismatch(column: column, storageClass: value.storageClass), sql: sql)
    }
}
