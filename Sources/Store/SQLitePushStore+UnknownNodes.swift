import SQLite

/// Answers for unknown nodes, capped per hour.
extension SQLitePushStore {
    public func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int) async throws -> Bool {
        try await run { database in
            try database.transaction { database in
                try database.execute("DELETE FROM unknown_node_answers WHERE at < ?", [.integer(since)])
                let recent = try database.queryOne("SELECT count(*) AS n FROM unknown_node_answers")
                    .decode("n", \.int64Value)
                guard recent < limit else { return false }
                try database.execute("INSERT INTO unknown_node_answers (at) VALUES (?)", [.integer(at)])
                return true
            }
        }
    }
}
