import PostgreSQL
import SQLCore
import SQLite

/// The smaller records on PostgreSQL, as `SQLitePushStore` keeps them: pushed calls, dedupe keys,
/// answers for unknown nodes, counters, policies, and their pruning.
extension PostgreSQLPushStore {
    /// A name not stored yet is added only while there are fewer than `limits.counters`.
    public func increment(_ counters: [String: Int64]) async throws {
        let limit = limits.counters
        try await run { connection in
            try Self.transaction(connection) { connection in
                for (name, amount) in counters.sorted(by: { $0.key < $1.key }) {
                    let updated = try connection.execute(
                        "UPDATE counters SET value = value + $1 WHERE name = $2", [.integer(amount), .text(name)])
                    guard updated == 0 else { continue }
                    try connection.execute(
                        """
                        INSERT INTO counters (name, value) SELECT $1, $2 WHERE (SELECT count(*) FROM counters) < $3
                        ON CONFLICT (name) DO UPDATE SET value = counters.value + EXCLUDED.value
                        """, [.text(name), .integer(amount), .integer(Int64(limit))])
                }
            }
        }
    }

    public func counters() async throws -> [String: Int64] {
        try await run { connection in
            var result: [String: Int64] = [:]
            for row in try connection.query("SELECT name, value FROM counters") {
                result[try row.decode("name", \.stringValue)] = try row.decode("value", \.int64Value)
            }
            return result
        }
    }

    public func setPolicy(account: String?, json: String?) async throws {
        try await run { connection in
            if let json {
                try connection.execute(
                    """
                    INSERT INTO policies (account, document) VALUES ($1, $2)
                    ON CONFLICT (account) DO UPDATE SET document = EXCLUDED.document
                    """, [.text(account ?? ""), .text(json)])
            } else {
                try connection.execute("DELETE FROM policies WHERE account = $1", [.text(account ?? "")])
            }
        }
    }

    public func prune(
        tombstonesBefore: Timestamp, sightingsBefore: Timestamp, callsBefore: Timestamp,
        unknownAnswersBefore: Timestamp, quietChatsBefore: Timestamp
    ) async throws {
        try await run { connection in
            try Self.transaction(connection) { connection in
                try connection.enqueue("DELETE FROM tombstones WHERE buried_at < $1", [.integer(tombstonesBefore)])
                try connection.enqueue("DELETE FROM sightings WHERE seen_at < $1", [.integer(sightingsBefore)])
                try connection.enqueue("DELETE FROM calls WHERE at < $1", [.integer(callsBefore)])
                try connection.enqueue(
                    "DELETE FROM unknown_node_answers WHERE at < $1", [.integer(unknownAnswersBefore)])
                try connection.enqueue(
                    """
                    DELETE FROM chats WHERE window_ends_at IS NULL AND held IS NULL
                        AND coalesce(last_message_at, 0) < $1 AND coalesce(last_read_push_at, 0) < $1
                    """, [.integer(quietChatsBefore)])
            }
        }
    }
}

extension PostgreSQLPushTransaction {
    func rememberCall(_ call: PendingCall) throws {
        try connection.enqueue(
            """
            INSERT INTO calls (registration_id, sid, chat, caller, media, at) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (registration_id, sid) DO UPDATE SET chat = EXCLUDED.chat, caller = EXCLUDED.caller,
                media = EXCLUDED.media, at = EXCLUDED.at
            """,
            [
                .integer(call.registrationID), .text(call.sid), .text(call.chat), .text(call.caller),
                .text(call.media.joined(separator: " ")), .integer(call.at),
            ])
        try connection.enqueue(
            """
            DELETE FROM calls WHERE (registration_id, sid) IN (SELECT registration_id, sid FROM calls
                WHERE registration_id = $1 ORDER BY at DESC, ctid DESC OFFSET $2)
            """, [.integer(call.registrationID), .integer(Int64(limits.callsPerRegistration))])
    }

    func takeCall(registrationID: Int64, sid: String, chat: String?) throws -> PendingCall? {
        guard
            let row = try connection.query(
                """
                DELETE FROM calls WHERE registration_id = $1 AND sid = $2 AND ($3::text IS NULL OR chat = $3)
                RETURNING *
                """, [.integer(registrationID), .text(sid), SQLitePushStore.optional(chat)]
            ).first
        else { return nil }
        return PendingCall(
            registrationID: registrationID, sid: sid, chat: try row.decode("chat", \.stringValue),
            caller: try row.decode("caller", \.stringValue),
            media: try row.decode("media", \.stringValue).split(separator: " ").map(String.init),
            at: try row.decode("at", \.int64Value))
    }

    /// One statement: of two connections seeing the key at once, only one finds it new.
    func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) throws -> Bool {
        let first =
            try connection.execute(
                """
                INSERT INTO sightings (registration_id, key, seen_at) VALUES ($1, $2, $3)
                ON CONFLICT (registration_id, key) DO UPDATE SET seen_at = EXCLUDED.seen_at
                    WHERE sightings.seen_at < $4
                """, [.integer(registrationID), .text(key), .integer(at), .integer(since)]) > 0
        guard first else { return false }
        try connection.enqueue(
            """
            DELETE FROM sightings WHERE (registration_id, key) IN (SELECT registration_id, key FROM sightings
                WHERE registration_id = $1 ORDER BY seen_at DESC, ctid DESC OFFSET $2)
            """, [.integer(registrationID), .integer(Int64(limits.sightingsPerRegistration))])
        return true
    }

    /// Serialised by an advisory lock: the count and the insert are one step across connections.
    func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int, account: String, accountLimit: Int)
        throws -> Bool
    {
        try connection.execute("SELECT pg_advisory_xact_lock(\(PostgreSQLPushStore.unknownNodeLock))")
        try connection.execute("DELETE FROM unknown_node_answers WHERE at < $1", [.integer(since)])
        let recent = try connection.queryOne("SELECT count(*) AS n FROM unknown_node_answers")
            .decode("n", \.int64Value)
        guard recent < limit else { return false }
        let recentForAccount = try connection.queryOne(
            "SELECT count(*) AS n FROM unknown_node_answers WHERE account = $1", [.text(account)]
        ).decode("n", \.int64Value)
        guard recentForAccount < accountLimit else { return false }
        try connection.execute(
            "INSERT INTO unknown_node_answers (at, account) VALUES ($1, $2)", [.integer(at), .text(account)])
        return true
    }

    func takeTestPush(account: String, at: Timestamp, window: Timestamp, limit: Int) throws -> Timestamp? {
        // One account's count and insert, atomic against other instances; other accounts go on.
        try connection.execute(
            "SELECT pg_advisory_xact_lock(\(PostgreSQLPushStore.testPushLockClass), hashtext($1))", [.text(account)])
        try connection.execute("DELETE FROM test_pushes WHERE at <= $1", [.integer(at - window)])
        let recent = try connection.queryOne(
            "SELECT count(*) AS n, min(at) AS oldest FROM test_pushes WHERE account = $1", [.text(account)])
        if try recent.decode("n", \.int64Value) >= Int64(limit) {
            return (try recent.decodeIfPresent("oldest", \.int64Value) ?? at) + window
        }
        try connection.execute("INSERT INTO test_pushes (account, at) VALUES ($1, $2)", [.text(account), .integer(at)])
        return nil
    }

    /// The defaults are stored under the empty account name.
    func policy(account: String?) throws -> String? {
        try connection.query("SELECT document FROM policies WHERE account = $1", [.text(account ?? "")]).first?
            .decode("document", \.stringValue)
    }

    /// As read with the publish's registration, if it was.
    func policyGeneration() throws -> Int64 {
        if let known = readAhead.policyGeneration { return known }
        return try connection.queryOne(Self.policyGenerationQuery).decode("value", \.int64Value)
    }

    static let policyGenerationQuery = "SELECT value FROM policy_generation"

    func accountsWithPolicyChanged(after: Int64, through: Int64) throws -> Set<String>? {
        try SQLitePushStore.accountsWithPolicyChanged(after: after, through: through) { sql in
            try connection.query(sql, [.integer(after), .integer(through)])
        }
    }
}

extension PostgreSQLPushStore {
    /// The advisory lock of the cap on answers for unknown nodes ("apushunk").
    static let unknownNodeLock: Int64 = 0x6170_7573_6875_6E6B
    /// The class of the advisory locks of accounts' test pushes ("aptp"), beside each account's hash.
    static let testPushLockClass: Int32 = 0x6170_7470
}
