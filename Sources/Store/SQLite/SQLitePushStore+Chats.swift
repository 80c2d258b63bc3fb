import Foundation
import SQLCore
import SQLite

/// Chats and their coalescing windows: one row per (registration, chat), changed atomically.
extension SQLitePushStore {
    /// `updateChat` inside a transaction the caller holds. A new chat past the registration's limit
    /// first forgets its quietest chats; if every one is busy, the new chat is not kept (its message is
    /// still pushed by the caller, just not held or counted).
    static func updateChat<Result>(
        registrationID: Int64, chat: String, limit: Int, in database: Database,
        _ change: (inout ChatState?) -> Result
    ) throws -> Result {
        var state = try database.query(
            "SELECT * FROM chats WHERE registration_id = ? AND chat = ?",
            [.integer(registrationID), .text(chat)]
        ).first.map(Self.chatState)
        let before = state
        let result = change(&state)
        guard state != before else { return result }
        if var state {
            if before == nil, !(try Self.makeRoomForChat(registrationID: registrationID, limit: limit, in: database)) {
                return result
            }
            // The row is the one asked for, whatever the closure wrote into the value.
            state.registrationID = registrationID
            state.chat = chat
            try Self.save(state, in: database)
        } else {
            try database.execute(
                "DELETE FROM chats WHERE registration_id = ? AND chat = ?",
                [.integer(registrationID), .text(chat)])
        }
        return result
    }

    /// Makes room for a new chat of the registration by forgetting its quietest chats with no open window
    /// and nothing held; false if every one is busy.
    private static func makeRoomForChat(registrationID: Int64, limit: Int, in database: Database) throws -> Bool {
        let held = try database.queryOne(
            "SELECT count(*) AS n FROM chats WHERE registration_id = ?",
            [.integer(registrationID)]
        ).decode("n", \.int64Value)
        let excess = held - Int64(limit) + 1
        guard excess > 0 else { return true }
        try database.execute(
            """
            DELETE FROM chats WHERE rowid IN (SELECT rowid FROM chats
                WHERE registration_id = ? AND window_ends_at IS NULL AND held IS NULL
                ORDER BY max(ifnull(last_message_at, 0), ifnull(last_read_push_at, 0)) LIMIT ?)
            """, [.integer(registrationID), .integer(excess)])
        return Int64(database.changes) == excess
    }

    public func chats(registrationID: Int64) async throws -> [ChatState] {
        try await run { database in
            try database.query(
                "SELECT * FROM chats WHERE registration_id = ? ORDER BY chat", [.integer(registrationID)]
            )
            .map(Self.chatState)
        }
    }

    public func dueWindows(at now: Timestamp, limit: Int) async throws -> [ChatState] {
        try await run { database in
            try database.query(
                """
                SELECT * FROM chats WHERE window_ends_at IS NOT NULL AND window_ends_at <= ?
                ORDER BY window_ends_at LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]
            ).map(Self.chatState)
        }
    }

    public func nextWindowEnd() async throws -> Timestamp? {
        try await run { database in
            try database.queryOne("SELECT min(window_ends_at) AS next FROM chats WHERE window_ends_at IS NOT NULL")
                .decodeIfPresent("next", \.int64Value)
        }
    }

    /// An update, not a replace: the triggers that keep each registration's unread total see the
    /// count's change (a replace's delete fires no trigger).
    private static func save(_ state: ChatState, in database: Database) throws {
        let held = try state.held.map { SQLValue.text(String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) }
        try database.execute(
            """
            INSERT INTO chats (registration_id, chat, count, last_message_at, window_ends_at, window_ms,
                held, noticed_since_read, last_read_push_at, generation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (registration_id, chat) DO UPDATE SET count = excluded.count,
                last_message_at = excluded.last_message_at, window_ends_at = excluded.window_ends_at,
                window_ms = excluded.window_ms, held = excluded.held,
                noticed_since_read = excluded.noticed_since_read, last_read_push_at = excluded.last_read_push_at,
                generation = excluded.generation
            """,
            [
                .integer(state.registrationID), .text(state.chat), .integer(Int64(state.count)),
                Self.optional(state.lastMessageAt), Self.optional(state.windowEndsAt),
                .integer(state.windowMilliseconds),
                held ?? .null, SQLValue(state.noticedSinceRead), Self.optional(state.lastReadPushAt),
                .integer(state.generation),
            ])
    }

    /// Strings as a JSON array: a list bound as one parameter.
    static func jsonArray(_ strings: [String]) throws -> String {
        String(decoding: try JSONEncoder().encode(strings), as: UTF8.self)
    }

    static func chatState(_ row: Row) throws -> ChatState {
        let held = try row.decodeIfPresent("held", \.stringValue).map { json in
            do {
                return try JSONDecoder().decode(HeldNotice.self, from: Data(json.utf8))
            } catch {
                throw row.unknownValue("held")
            }
        }
        return ChatState(
            registrationID: try row.decode("registration_id", \.int64Value),
            chat: try row.decode("chat", \.stringValue),
            count: Int(try row.decode("count", \.int64Value)),
            lastMessageAt: try row.decodeIfPresent("last_message_at", \.int64Value),
            windowEndsAt: try row.decodeIfPresent("window_ends_at", \.int64Value),
            windowMilliseconds: try row.decode("window_ms", \.int64Value), held: held,
            noticedSinceRead: try row.decode("noticed_since_read", \.boolValue),
            lastReadPushAt: try row.decodeIfPresent("last_read_push_at", \.int64Value),
            generation: try row.decode("generation", \.int64Value))
    }
}

extension SQLitePushTransaction {
    func updateChat<Result>(
        registrationID: Int64, chat: String, unreadExcluding: [String]?,
        _ change: (inout ChatState?, _ unreadBefore: Int?) -> Result
    ) throws -> Result {
        let unread = try unreadExcluding.map { try unreadTotal(registrationID: registrationID, excluding: $0) }
        return try SQLitePushStore.updateChat(
            registrationID: registrationID, chat: chat, limit: limits.chatsPerRegistration, in: database
        ) { change(&$0, unread) }
    }

    /// The registration's unread total less the chats in `chats`, as `updateChat` passes it.
    private func unreadTotal(registrationID: Int64, excluding chats: [String]) throws -> Int {
        let total =
            try database.query("SELECT unread FROM registrations WHERE id = ?", [.integer(registrationID)])
            .first?.decode("unread", \.int64Value) ?? 0
        guard !chats.isEmpty, total > 0 else { return Int(total) }
        let excluded = try database.queryOne(
            """
            SELECT ifnull(sum(count), 0) AS n FROM chats
            WHERE registration_id = ? AND chat IN (SELECT value FROM json_each(?))
            """, [.integer(registrationID), .text(try SQLitePushStore.jsonArray(chats))]
        ).decode("n", \.int64Value)
        return Int(total - excluded)
    }
}
