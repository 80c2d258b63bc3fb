import SQLCore
import SQLite

/// Maintenance: forgetting what has expired.
extension SQLitePushStore {
    public func prune(
        tombstonesBefore: Timestamp, sightingsBefore: Timestamp, callsBefore: Timestamp,
        unknownAnswersBefore: Timestamp, quietChatsBefore: Timestamp
    ) async throws {
        try await run { database in
            try database.transaction { database in
                try database.execute("DELETE FROM tombstones WHERE buried_at < ?", [.integer(tombstonesBefore)])
                try database.execute("DELETE FROM sightings WHERE seen_at < ?", [.integer(sightingsBefore)])
                try database.execute("DELETE FROM calls WHERE at < ?", [.integer(callsBefore)])
                try database.execute("DELETE FROM unknown_node_answers WHERE at < ?", [.integer(unknownAnswersBefore)])
                try database.execute(
                    """
                    DELETE FROM chats WHERE window_ends_at IS NULL AND held IS NULL
                        AND coalesce(last_message_at, 0) < ?1 AND coalesce(last_read_push_at, 0) < ?1
                    """, [.integer(quietChatsBefore)])
            }
        }
    }
}
