import SQLCore
import SQLite

/// Tombstones: a token buried for its module, for every account (a dead token) or one (a removal), so a
/// server's late publish does not bring it back.
extension SQLitePushStore {
    /// The scope of a dead token's tombstone, and of the registration with no account's (accounts are
    /// bare JIDs, never either).
    static let everyAccountScope = "*"
    static let accountlessScope = ""

    static func bury(token: String, pushModule: String, scope: String, at: Timestamp, in database: Database)
        throws
    {
        try database.execute(
            """
            INSERT OR REPLACE INTO tombstones (token, push_module, scope, buried_at) VALUES (?, ?, ?, ?)
            """, [.text(token), .text(pushModule), .text(scope), .integer(at)])
    }

    public func exhume(token: String, pushModule: String, account: String) async throws {
        try await run { database in
            try database.execute(
                "DELETE FROM tombstones WHERE token = ? AND push_module = ? AND scope IN (?, ?)",
                [.text(token), .text(pushModule), .text(Self.everyAccountScope), .text(account)])
        }
    }
}

extension SQLitePushTransaction {
    func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp) throws -> Bool {
        !(try database.query(
            """
            SELECT 1 FROM tombstones WHERE token = ?1 AND (?2 IS NULL OR push_module = ?2)
                AND scope IN (?3, ?4) AND buried_at >= ?5 LIMIT 1
            """,
            [
                .text(token), SQLitePushStore.optional(pushModule), .text(SQLitePushStore.everyAccountScope),
                .text(account ?? SQLitePushStore.accountlessScope), .integer(since),
            ]
        ).isEmpty)
    }
}
