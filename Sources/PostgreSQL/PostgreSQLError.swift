/// A failed libpq call: the SQLSTATE (nil when the server sent none, e.g. a connection that could not
/// be made or was lost), the server's primary message and the SQL that failed.
///
/// Parameters and the server's DETAIL (which quotes the values of a violated key) are never part of
/// the error, and a password in a message is masked, so tokens and secrets cannot reach a log through it.
public struct PostgreSQLError: Error, CustomStringConvertible, Equatable {
    /// The five-character SQLSTATE, e.g. `23505` for a unique violation.
    public var sqlState: String?
    public var message: String
    public var sql: String?
    /// The connection is gone (never made, closed by the server, broken): a new one is needed.
    public var connectionLost: Bool

    public init(sqlState: String?, message: String, sql: String? = nil, connectionLost: Bool = false) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
        self.connectionLost = connectionLost
    }

    public static let uniqueViolation = "23505"
    public static let serializationFailure = "40001"
    public static let deadlockDetected = "40P01"
    public static let featureNotSupported = "0A000"

    /// The same statement may work later: the connection was lost or refused (class 08), the server is
    /// shutting down or starting (57P01-57P03), lacks a resource (class 53), a concurrent transaction
    /// won (serialization failure, deadlock, a lock not available), a statement ran out of time
    /// waiting (57014, `statement_timeout`), or a prepared statement went stale.
    public var mayPass: Bool {
        guard !connectionLost, !isStalePreparedStatement else { return true }
        guard let sqlState else { return false }
        return [Self.serializationFailure, Self.deadlockDetected, "55P03", "57014", "57P01", "57P02", "57P03"]
            .contains(sqlState) || sqlState.hasPrefix("08") || sqlState.hasPrefix("53")
    }

    /// A statement the session prepared in an earlier exchange, and ran, reads a table whose columns
    /// changed since (a newer instance migrated the schema): the server refuses to run it ("cached
    /// plan must not change result type", `featureNotSupported`), and the session prepares it again
    /// the next time it is sent, so running the transaction again succeeds. Set by `Connection`, which
    /// alone knows what it prepared when; not told by the message, which a server may word in another
    /// language.
    public internal(set) var isStalePreparedStatement = false

    /// A concurrent transaction won: running the whole transaction again may succeed.
    public var isTransactionConflict: Bool {
        sqlState == Self.serializationFailure || sqlState == Self.deadlockDetected
    }

    public var description: String {
        let state = sqlState.map { " \($0)" } ?? (connectionLost ? " (connection lost)" : "")
        let location = sql.map { " in \"\($0)\"" } ?? ""
        return "PostgreSQL error\(state): \(message)\(location)"
    }
}
