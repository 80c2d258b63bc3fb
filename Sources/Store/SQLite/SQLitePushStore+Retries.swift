import SQLCore
import SQLite

/// Retries, which are also the outbox: every push is kept here from before it is sent until its answer
/// is recorded, and claimed (leased) while in flight.
extension SQLitePushStore {
    @discardableResult
    /// Inserts a retry, or returns nil when the registration's or the store's cap of retries is reached.
    /// Every insert goes through here, the outbox's included, so no path passes the caps.
    static func insert(_ item: RetryItem, limits: StoreLimits, in database: Database) throws -> Int64? {
        let queued = try database.queryOne(
            "SELECT count(*) AS n FROM retries WHERE registration_id = ?",
            [.integer(item.registrationID)]
        ).decode("n", \.int64Value)
        guard queued < limits.retriesPerRegistration,
            try Self.size("retries", in: database) < limits.retries
        else { return nil }
        try database.execute(
            """
            INSERT INTO retries (registration_id, summary, kind, collapse_chat, attempts, next_at, deadline,
                generation) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(item.registrationID), .text(item.summary), .text(item.kind), optional(item.collapseChat),
                .integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.deadline),
                .integer(item.generation),
            ])
        return database.lastInsertRowID
    }

    public func nextRetry() async throws -> Timestamp? {
        try await run { database in
            try database.queryOne("SELECT min(next_at) AS next FROM retries").decodeIfPresent("next", \.int64Value)
        }
    }

    public func updateRetry(_ item: RetryItem) async throws {
        try await run { database in
            try database.execute(
                "UPDATE retries SET attempts = ?, next_at = ? WHERE id = ?",
                [.integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.id)])
        }
    }

    public func deleteRetry(id: Int64) async throws {
        try await run { database in
            try database.execute("DELETE FROM retries WHERE id = ?", [.integer(id)])
        }
    }

    static func retryItem(_ row: Row) throws -> RetryItem {
        RetryItem(
            id: try row.decode("id", \.int64Value), registrationID: try row.decode("registration_id", \.int64Value),
            summary: try row.decode("summary", \.stringValue), kind: try row.decode("kind", \.stringValue),
            collapseChat: try row.decodeIfPresent("collapse_chat", \.stringValue),
            attempts: Int(try row.decode("attempts", \.int64Value)),
            nextAt: try row.decode("next_at", \.int64Value), deadline: try row.decode("deadline", \.int64Value),
            generation: try row.decode("generation", \.int64Value))
    }

    public func claimDueRetries(at now: Timestamp, limit: Int, leaseUntil: Timestamp) async throws -> [RetryItem] {
        try await run { database in
            try database.transaction { database in
                let due = "next_at <= ?1 AND deadline >= ?1 ORDER BY next_at, id LIMIT ?2"
                let calls = try database.query(
                    "SELECT * FROM retries WHERE kind = 'call' AND \(due)",
                    [.integer(now), .integer(Int64(limit))]
                ).map(Self.retryItem)
                let others =
                    calls.count < limit
                    ? try database.query(
                        "SELECT * FROM retries WHERE kind <> 'call' AND \(due)",
                        [.integer(now), .integer(Int64(limit - calls.count))]
                    ).map(Self.retryItem)
                    : []
                var claimed = calls + others
                for index in claimed.indices {
                    claimed[index].nextAt = leaseUntil
                    try database.execute(
                        "UPDATE retries SET next_at = ? WHERE id = ?",
                        [.integer(leaseUntil), .integer(claimed[index].id)])
                }
                return claimed
            }
        }
    }

    public func deleteExpiredRetries(at now: Timestamp) async throws -> [String: Int] {
        try await run { database in
            try database.transaction { database in
                // A leased item is in flight until its lease ends: its answer may still come.
                let expired = "deadline < ?1 AND next_at <= ?1"
                var counts: [String: Int] = [:]
                for row in try database.query(
                    "SELECT kind, count(*) AS n FROM retries WHERE \(expired) GROUP BY kind",
                    [.integer(now)])
                {
                    counts[try row.decode("kind", \.stringValue), default: 0] += Int(try row.decode("n", \.int64Value))
                }
                if !counts.isEmpty {
                    try database.execute("DELETE FROM retries WHERE \(expired)", [.integer(now)])
                }
                return counts
            }
        }
    }
}

extension SQLitePushTransaction {
    func enqueueRetry(_ item: RetryItem) throws -> RetryItem? {
        try SQLitePushStore.insert(item, limits: limits, in: database).map { id in
            var kept = item
            kept.id = id
            return kept
        }
    }
}
