import Foundation
import PostgreSQL
import SQLCore
import SQLite

/// Chats and their windows on PostgreSQL: a change of one registration's chats holds its row's lock,
/// so the decisions on a chat (and the cap on chats) are serialised across connections.
extension PostgreSQLPushStore {
    /// `SQLitePushStore.updateChat`'s rules.
    static func updateChat<Result>(
        registrationID: Int64, chat: String, limit: Int, in connection: Connection,
        _ change: (inout ChatState?) -> Result
    ) throws -> Result {
        try connection.execute("SELECT 1 FROM registrations WHERE id = $1 FOR UPDATE", [.integer(registrationID)])
        var state = try connection.query(
            "SELECT * FROM chats WHERE registration_id = $1 AND chat = $2", [.integer(registrationID), .text(chat)]
        ).first.map(SQLitePushStore.chatState)
        let before = state
        let result = change(&state)
        guard state != before else { return result }
        if var state {
            if before == nil, !(try makeRoomForChat(registrationID: registrationID, limit: limit, in: connection)) {
                return result
            }
            state.registrationID = registrationID
            state.chat = chat
            try save(state, in: connection)
        } else {
            try connection.execute(
                "DELETE FROM chats WHERE registration_id = $1 AND chat = $2", [.integer(registrationID), .text(chat)])
        }
        return result
    }

    private static func makeRoomForChat(registrationID: Int64, limit: Int, in connection: Connection) throws -> Bool {
        let held = try connection.queryOne(
            "SELECT count(*) AS n FROM chats WHERE registration_id = $1", [.integer(registrationID)]
        ).decode("n", \.int64Value)
        let excess = held - Int64(limit) + 1
        guard excess > 0 else { return true }
        let removed = try connection.execute(
            """
            DELETE FROM chats WHERE (registration_id, chat) IN (SELECT registration_id, chat FROM chats
                WHERE registration_id = $1 AND window_ends_at IS NULL AND held IS NULL
                ORDER BY greatest(coalesce(last_message_at, 0), coalesce(last_read_push_at, 0)) LIMIT $2)
            """, [.integer(registrationID), .integer(excess)])
        return Int64(removed) == excess
    }

    private static func save(_ state: ChatState, in connection: Connection) throws {
        let held = try state.held.map { SQLValue.text(String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) }
        try connection.execute(
            """
            INSERT INTO chats (registration_id, chat, count, last_message_at, window_ends_at, window_ms, held,
                noticed_since_read, last_read_push_at, generation) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            ON CONFLICT (registration_id, chat) DO UPDATE SET count = EXCLUDED.count,
                last_message_at = EXCLUDED.last_message_at, window_ends_at = EXCLUDED.window_ends_at,
                window_ms = EXCLUDED.window_ms, held = EXCLUDED.held,
                noticed_since_read = EXCLUDED.noticed_since_read, last_read_push_at = EXCLUDED.last_read_push_at,
                generation = EXCLUDED.generation
            """,
            [
                .integer(state.registrationID), .text(state.chat), .integer(Int64(state.count)),
                SQLitePushStore.optional(state.lastMessageAt), SQLitePushStore.optional(state.windowEndsAt),
                .integer(state.windowMilliseconds), held ?? .null, SQLValue(state.noticedSinceRead),
                SQLitePushStore.optional(state.lastReadPushAt), .integer(state.generation),
            ])
    }

    public func chats(registrationID: Int64) async throws -> [ChatState] {
        try await run { connection in
            try connection.query(
                "SELECT * FROM chats WHERE registration_id = $1 ORDER BY chat COLLATE \"C\"",
                [.integer(registrationID)]
            ).map(SQLitePushStore.chatState)
        }
    }

    public func dueWindows(at now: Timestamp, limit: Int) async throws -> [ChatState] {
        try await run { connection in
            try connection.query(
                """
                SELECT * FROM chats WHERE window_ends_at IS NOT NULL AND window_ends_at <= $1
                ORDER BY window_ends_at LIMIT $2
                """, [.integer(now), .integer(Int64(limit))]
            ).map(SQLitePushStore.chatState)
        }
    }

    public func nextWindowEnd() async throws -> Timestamp? {
        try await run { connection in
            try connection.queryOne("SELECT min(window_ends_at) AS next FROM chats WHERE window_ends_at IS NOT NULL")
                .decodeIfPresent("next", \.int64Value)
        }
    }
}

extension PostgreSQLPushTransaction {
    func updateChat<Result>(registrationID: Int64, chat: String, _ change: (inout ChatState?) -> Result) throws
        -> Result
    {
        try PostgreSQLPushStore.updateChat(
            registrationID: registrationID, chat: chat, limit: limits.chatsPerRegistration, in: connection, change)
    }

    func unreadTotal(registrationID: Int64, excluding chats: [String]) throws -> Int {
        let total =
            try connection.query(
                "SELECT unread FROM registrations WHERE id = $1 FOR UPDATE", [.integer(registrationID)]
            ).first?.decode("unread", \.int64Value) ?? 0
        guard !chats.isEmpty, total > 0 else { return Int(total) }
        let excluded = try connection.queryOne(
            """
            SELECT coalesce(sum(count), 0)::bigint AS n FROM chats
            WHERE registration_id = $1 AND chat IN (SELECT jsonb_array_elements_text($2::jsonb))
            """, [.integer(registrationID), .text(try SQLitePushStore.jsonArray(chats))]
        ).decode("n", \.int64Value)
        return Int(total - excluded)
    }
}
