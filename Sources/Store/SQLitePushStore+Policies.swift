import SQLite

/// Policies: one JSON document per account, and the defaults under the empty account name.
extension SQLitePushStore {
    /// The defaults are stored under the empty account name.
    public func policy(account: String?) async throws -> String? {
        try await run { database in
            try database.query("SELECT document FROM policies WHERE account = ?", [.text(account ?? "")]).first?
                .decode("document", \.stringValue)
        }
    }

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
