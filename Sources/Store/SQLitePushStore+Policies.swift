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
}
