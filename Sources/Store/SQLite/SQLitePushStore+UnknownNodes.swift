import SQLCore
import SQLite

/// Answers for unknown nodes, capped per hour for the server and for each account.
extension SQLitePushTransaction {
    func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int, account: String, accountLimit: Int)
        throws -> Bool
    {
        try database.execute("DELETE FROM unknown_node_answers WHERE at < ?", [.integer(since)])
        let recent = try database.queryOne("SELECT count(*) AS n FROM unknown_node_answers")
            .decode("n", \.int64Value)
        guard recent < limit else { return false }
        let recentForAccount = try database.queryOne(
            "SELECT count(*) AS n FROM unknown_node_answers WHERE account = ?", [.text(account)]
        ).decode("n", \.int64Value)
        guard recentForAccount < accountLimit else { return false }
        try database.execute(
            "INSERT INTO unknown_node_answers (at, account) VALUES (?, ?)", [.integer(at), .text(account)])
        return true
    }
}
