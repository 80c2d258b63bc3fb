/// A row that does not decode as the code expects, after GRDB's `RowDecodingError`: names the column
/// and the statement, and the storage class found, never the value (it may be a token).
public struct RowDecodingError: Error, Hashable, CustomStringConvertible {
    public enum Problem: Hashable, Sendable {
        /// The statement returned no row where it must return one (an aggregate, a kept total).
        case noRow
        /// The statement does not return the column.
        case missingColumn(String)
        /// A NULL where a value is required, or a value of another storage class.
        case mismatch(column: String, storageClass: String)
        /// A value of the right storage class that this build does not know (e.g. an unknown enum case).
        case unknownValue(column: String, storageClass: String)
    }

    public var problem: Problem
    public var sql: String?

    public init(_ problem: Problem, sql: String?) {
        self.problem = problem
        self.sql = sql
    }

    public var description: String {
        let what =
            switch problem {
            case .noRow: "no row"
            case .missingColumn(let column): "no column \(column)"
            case .mismatch(let column, let storageClass): "column \(column) holds an unexpected \(storageClass)"
            case .unknownValue(let column, let storageClass):
                "column \(column) holds a \(storageClass) that is no value this build knows"
            }
        guard let sql else { return what }
        return problem == .noRow ? "\(what) from \"\(sql)\"" : "\(what) in \"\(sql)\""
    }
}
