import Foundation
import PostgreSQL
import SQLCore
import SQLite

/// Chats and their windows on PostgreSQL: a change of one registration's chats holds its row's lock,
/// so the decisions on a chat (and the cap on chats) are serialised across connections. What a change
/// decides on is read in one statement (`ChatRead`), and what it writes goes with the next exchange
/// (the commit, most often): a message's push costs one round trip here.
extension PostgreSQLPushStore {
    /// What a change of one chat decides on, read under the registration's lock.
    struct ChatRead {
        var state: ChatState?
        /// The registration's unread total less the excluded chats' counts, when asked for.
        var unreadBefore: Int?
        /// For a chat not stored yet: how many the registration has, and how many of them (no window
        /// open, nothing held) may go to make room.
        var chatsHeld: Int64 = 0
        var chatsRemovable: Int64 = 0
        /// When an item may be stored with the change: the registration's queued items, the store's,
        /// and the id the item takes (drawn from the table's own sequence).
        var room: (queued: Int64, kept: Int64, nextID: Int64)?
    }

    /// Locks the registration, then reads `ChatRead` in one round trip (a registration gone reads as
    /// no chat, no total and no room). The lock is a statement of its own, sent before the read: at
    /// READ COMMITTED a statement that waited for a row's lock sees the other rows it joins as they were
    /// before it waited, but the next statement sees what the holder committed.
    static func readChat(
        registrationID: Int64, chat: String, unreadExcluding: [String]?, withRoomForItem: Bool,
        in connection: Connection
    ) throws -> ChatRead {
        let excluded = try unreadExcluding.flatMap { $0.isEmpty ? nil : try SQLitePushStore.jsonArray($0) }
        let room =
            withRoomForItem
            ? """
            , (SELECT count(*) FROM retries WHERE registration_id = $1) AS room_queued,
                (\(retriesKeptSum)) AS room_kept,
                nextval(pg_get_serial_sequence('retries', 'id')) AS room_id
            """ : ""
        try connection.enqueue("SELECT 1 FROM registrations WHERE id = $1 FOR UPDATE", [.integer(registrationID)])
        guard
            let row = try connection.query(
                """
                SELECT (r.unread - CASE WHEN $3::jsonb IS NULL THEN 0 ELSE (SELECT coalesce(sum(count), 0)
                        FROM chats WHERE registration_id = $1 AND chat IN (SELECT jsonb_array_elements_text($3::jsonb)))
                    END)::bigint AS unread_before,
                    CASE WHEN c.chat IS NULL THEN (SELECT count(*) FROM chats WHERE registration_id = $1) END
                        AS chats_held,
                    CASE WHEN c.chat IS NULL THEN (SELECT count(*) FROM chats WHERE registration_id = $1
                        AND window_ends_at IS NULL AND held IS NULL) END AS chats_removable,
                    c.* \(room)
                FROM registrations r LEFT JOIN chats c ON c.registration_id = r.id AND c.chat = $2
                WHERE r.id = $1
                """, [.integer(registrationID), .text(chat), excluded.map(SQLValue.text) ?? .null]
            ).first
        else { return ChatRead(unreadBefore: unreadExcluding.map { _ in 0 }) }
        var read = ChatRead(
            state: try row.decodeIfPresent("chat", \.stringValue) == nil ? nil : try SQLitePushStore.chatState(row),
            unreadBefore: try unreadExcluding.map { _ in Int(try row.decode("unread_before", \.int64Value)) },
            chatsHeld: try row.decodeIfPresent("chats_held", \.int64Value) ?? 0,
            chatsRemovable: try row.decodeIfPresent("chats_removable", \.int64Value) ?? 0)
        if withRoomForItem {
            read.room = (
                try row.decode("room_queued", \.int64Value), try row.decode("room_kept", \.int64Value),
                try row.decode("room_id", \.int64Value)
            )
        }
        return read
    }

    /// `SQLitePushStore.updateChat`'s rules on what `read` read: runs `change` and queues what it
    /// leaves to be stored.
    static func updateChat<Result>(
        _ read: ChatRead, registrationID: Int64, chat: String, limit: Int, in connection: Connection,
        _ change: (inout ChatState?) -> Result
    ) throws -> Result {
        var state = read.state
        let result = change(&state)
        guard state != read.state else { return result }
        if var state {
            if read.state == nil {
                let excess = read.chatsHeld - Int64(limit) + 1
                if excess > 0 {
                    guard read.chatsRemovable >= excess else { return result }
                    try connection.enqueue(
                        """
                        DELETE FROM chats WHERE (registration_id, chat) IN (SELECT registration_id, chat FROM chats
                            WHERE registration_id = $1 AND window_ends_at IS NULL AND held IS NULL
                            ORDER BY greatest(coalesce(last_message_at, 0), coalesce(last_read_push_at, 0)) LIMIT $2)
                        """, [.integer(registrationID), .integer(excess)])
                }
            }
            state.registrationID = registrationID
            state.chat = chat
            try save(state, in: connection)
        } else {
            try connection.enqueue(
                "DELETE FROM chats WHERE registration_id = $1 AND chat = $2", [.integer(registrationID), .text(chat)])
        }
        return result
    }

    private static func save(_ state: ChatState, in connection: Connection) throws {
        let held = try state.held.map { SQLValue.text(String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) }
        try connection.enqueue(
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
    func updateChat<Result>(
        registrationID: Int64, chat: String, unreadExcluding: [String]?,
        _ change: (inout ChatState?, _ unreadBefore: Int?) -> Result
    ) throws -> Result {
        let read = try PostgreSQLPushStore.readChat(
            registrationID: registrationID, chat: chat, unreadExcluding: unreadExcluding, withRoomForItem: false,
            in: connection)
        return try PostgreSQLPushStore.updateChat(
            read, registrationID: registrationID, chat: chat, limit: limits.chatsPerRegistration, in: connection
        ) { change(&$0, read.unreadBefore) }
    }

    /// The room for the item is read with the chat, so the item is queued with the chat's change: no
    /// round trip of its own.
    func updateChatAndEnqueue<Result>(
        registrationID: Int64, chat: String, unreadExcluding: [String]?,
        _ change: (inout ChatState?, _ unreadBefore: Int?) -> (Result, RetryItem?)
    ) throws -> (Result, RetryItem?) {
        let read = try PostgreSQLPushStore.readChat(
            registrationID: registrationID, chat: chat, unreadExcluding: unreadExcluding, withRoomForItem: true,
            in: connection)
        let (result, item) = try PostgreSQLPushStore.updateChat(
            read, registrationID: registrationID, chat: chat, limit: limits.chatsPerRegistration, in: connection
        ) { change(&$0, read.unreadBefore) }
        guard var item, let room = read.room, room.queued < limits.retriesPerRegistration, room.kept < limits.retries
        else { return (result, nil) }
        item.id = room.nextID
        try PostgreSQLPushStore.queueInsert(item, in: connection)
        return (result, item)
    }
}
