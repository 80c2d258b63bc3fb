import SQLCore
import SQLite

/// `#test` pushes: each account's of the last window, so that every instance sharing the store counts
/// them alike.
extension SQLitePushTransaction {
    func takeTestPush(account: String, at: Timestamp, window: Timestamp, limit: Int) throws -> Timestamp? {
        try database.execute("DELETE FROM test_pushes WHERE at <= ?", [.integer(at - window)])
        let recent = try database.queryOne(
            "SELECT count(*) AS n, min(at) AS oldest FROM test_pushes WHERE account = ?", [.text(account)])
        if try recent.decode("n", \.int64Value) >= Int64(limit) {
            return (try recent.decodeIfPresent("oldest", \.int64Value) ?? at) + window
        }
        try database.execute("INSERT INTO test_pushes (account, at) VALUES (?, ?)", [.text(account), .integer(at)])
        return nil
    }
}
