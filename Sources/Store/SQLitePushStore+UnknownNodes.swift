import SQLite

/// Answers for unknown nodes, capped per hour.
extension SQLitePushTransaction {
    func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int) throws -> Bool {
        try database.execute("DELETE FROM unknown_node_answers WHERE at < ?", [.integer(since)])
        let recent = try database.queryOne("SELECT count(*) AS n FROM unknown_node_answers")
            .decode("n", \.int64Value)
        guard recent < limit else { return false }
        try database.execute("INSERT INTO unknown_node_answers (at) VALUES (?)", [.integer(at)])
        return true
    }
}
