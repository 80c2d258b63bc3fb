import SQLCore
import SQLite

/// Policies: one JSON document per account, and the defaults under the empty account name.
extension SQLitePushStore {
    public func setPolicy(account: String?, json: String?) async throws {
        try await run { database in
            if let json {
                try database.execute(
                    "INSERT OR REPLACE INTO policies (account, document) VALUES (?, ?)",
                    [.text(account ?? ""), .text(json)])
            } else {
                try database.execute("DELETE FROM policies WHERE account = ?", [.text(account ?? "")])
            }
        }
    }
}

extension SQLitePushTransaction {
    /// The defaults are stored under the empty account name.
    func policy(account: String?) throws -> String? {
        try database.query("SELECT document FROM policies WHERE account = ?", [.text(account ?? "")]).first?
            .decode("document", \.stringValue)
    }

    func policyGeneration() throws -> Int64 {
        try database.queryOne("SELECT value FROM policy_generation").decode("value", \.int64Value)
    }

    func accountsWithPolicyChanged(after: Int64, through: Int64) throws -> Set<String>? {
        try SQLitePushStore.accountsWithPolicyChanged(after: after, through: through) { sql in
            try database.query(sql, [.integer(after), .integer(through)])
        }
    }
}

extension SQLitePushStore {
    /// `accountsWithPolicyChanged` on the rows `query` returns for the log's range (`?1`/`$1` after,
    /// `?2`/`$2` through): every generation of the range is one row, or the log no longer has them all.
    static func accountsWithPolicyChanged(
        after: Int64, through: Int64, query: (String) throws -> [Row]
    ) throws -> Set<String>? {
        guard through > after else { return [] }
        guard through - after <= StoreLimits.policyChangesKept else { return nil }
        let rows = try query("SELECT account FROM policy_changes WHERE generation > $1 AND generation <= $2")
        guard Int64(rows.count) == through - after else { return nil }
        return Set(try rows.map { try $0.decode("account", \.stringValue) })
    }
}
