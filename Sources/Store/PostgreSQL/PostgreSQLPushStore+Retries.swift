import PostgreSQL
import SQLCore
import SQLite

/// Retries and the outbox on PostgreSQL. A claim skips the items another connection (or instance) is
/// claiming (`FOR UPDATE SKIP LOCKED`), so each due item is leased once.
extension PostgreSQLPushStore {
    /// Inserts a retry, or returns nil at the registration's or the store's cap (the store's checked
    /// unlocked: see migration 3).
    static func insert(_ item: RetryItem, limits: StoreLimits, in connection: Connection) throws -> Int64? {
        let queued = try connection.queryOne(
            "SELECT count(*) AS n FROM retries WHERE registration_id = $1", [.integer(item.registrationID)]
        ).decode("n", \.int64Value)
        guard queued < limits.retriesPerRegistration, try retriesKept(in: connection) < limits.retries
        else { return nil }
        return try connection.queryOne(
            "INSERT INTO retries \(insertColumns) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
            insertValues(item)
        ).decode("id", \.int64Value)
    }

    /// Queues the insert of a retry whose id was drawn already and whose room was read (`ChatRead`).
    static func queueInsert(_ item: RetryItem, in connection: Connection) throws {
        try connection.enqueue(
            """
            INSERT INTO retries (id, \(insertColumns.dropFirst()) OVERRIDING SYSTEM VALUE
            VALUES ($9, $1, $2, $3, $4, $5, $6, $7, $8)
            """, insertValues(item) + [.integer(item.id)])
    }

    private static let insertColumns =
        "(registration_id, summary, kind, collapse_chat, attempts, next_at, deadline, generation)"

    private static func insertValues(_ item: RetryItem) -> [SQLValue] {
        [
            .integer(item.registrationID), .text(item.summary), .text(item.kind),
            SQLitePushStore.optional(item.collapseChat), .integer(Int64(item.attempts)), .integer(item.nextAt),
            .integer(item.deadline), .integer(item.generation),
        ]
    }

    /// The retries kept, summed over the shards of their total.
    static func retriesKept(in connection: Connection) throws -> Int {
        Int(try connection.queryOne("SELECT (\(retriesKeptSum)) AS n").decode("n", \.int64Value))
    }

    /// The retries kept: the sum of their total's shards, as a subquery.
    static let retriesKeptSum = "SELECT coalesce(sum(count), 0)::bigint FROM sizes WHERE name LIKE 'retries#%'"

    public func nextRetry() async throws -> Timestamp? {
        try await run { connection in
            try connection.queryOne("SELECT min(next_at) AS next FROM retries").decodeIfPresent("next", \.int64Value)
        }
    }

    public func updateRetry(_ item: RetryItem) async throws {
        try await run { connection in
            try connection.execute(
                "UPDATE retries SET attempts = $1, next_at = $2 WHERE id = $3",
                [.integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.id)])
        }
    }

    public func deleteRetry(id: Int64) async throws {
        try await run { connection in
            try connection.execute("DELETE FROM retries WHERE id = $1", [.integer(id)])
        }
    }

    public func claimDueRetries(at now: Timestamp, limit: Int, leaseUntil: Timestamp) async throws -> [RetryItem] {
        try await run { connection in
            try Self.transaction(connection) { connection in
                let calls = try Self.claim(
                    "kind = 'call'", at: now, limit: limit, leaseUntil: leaseUntil, in: connection)
                let others =
                    calls.count < limit
                    ? try Self.claim(
                        "kind <> 'call'", at: now, limit: limit - calls.count, leaseUntil: leaseUntil, in: connection)
                    : []
                return calls + others
            }
        }
    }

    /// Leases up to `limit` due items of a kind, longest due first.
    private static func claim(
        _ kind: String, at now: Timestamp, limit: Int, leaseUntil: Timestamp, in connection: Connection
    ) throws -> [RetryItem] {
        let rows = try connection.query(
            """
            WITH due AS (SELECT id, next_at AS due_at FROM retries
                WHERE \(kind) AND next_at <= $1 AND deadline >= $1 ORDER BY next_at, id LIMIT $2
                FOR UPDATE SKIP LOCKED)
            UPDATE retries SET next_at = $3 FROM due WHERE retries.id = due.id
            RETURNING retries.*, due.due_at
            """, [.integer(now), .integer(Int64(limit)), .integer(leaseUntil)])
        return try rows.map { row in (try row.decode("due_at", \.int64Value), try SQLitePushStore.retryItem(row)) }
            .sorted { ($0.0, $0.1.id) < ($1.0, $1.1.id) }.map(\.1)
    }

    public func deleteExpiredRetries(at now: Timestamp) async throws -> [String: Int] {
        try await run { connection in
            var counts: [String: Int] = [:]
            // A leased item is in flight until its lease ends: its answer may still come.
            for row in try connection.query(
                "DELETE FROM retries WHERE deadline < $1 AND next_at <= $1 RETURNING kind", [.integer(now)])
            {
                counts[try row.decode("kind", \.stringValue), default: 0] += 1
            }
            return counts
        }
    }
}

extension PostgreSQLPushTransaction {
    func enqueueRetry(_ item: RetryItem) throws -> RetryItem? {
        try PostgreSQLPushStore.insert(item, limits: limits, in: connection).map { id in
            var kept = item
            kept.id = id
            return kept
        }
    }
}
