import SQLCore
import SQLite

/// Counters: the statistics totals `admin-stats` shows, kept across restarts.
extension SQLitePushStore {
    /// A name not stored yet is added only while there are fewer than `limits.counters`.
    public func increment(_ counters: [String: Int64]) async throws {
        let limit = limits.counters
        try await run { database in
            try database.transaction { database in
                for (name, amount) in counters {
                    try database.execute(
                        "UPDATE counters SET value = value + ? WHERE name = ?",
                        [.integer(amount), .text(name)])
                    guard database.changes == 0 else { continue }
                    try database.execute(
                        """
                        INSERT INTO counters (name, value) SELECT ?1, ?2 WHERE (SELECT count(*) FROM counters) < ?3
                        """, [.text(name), .integer(amount), .integer(Int64(limit))])
                }
            }
        }
    }

    public func counters() async throws -> [String: Int64] {
        try await run { database in
            var result: [String: Int64] = [:]
            for row in try database.query("SELECT name, value FROM counters") {
                result[try row.decode("name", \.stringValue)] = try row.decode("value", \.int64Value)
            }
            return result
        }
    }
}
