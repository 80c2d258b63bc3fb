import SQLCore
import SQLite

/// Dedupe: the keys of messages already pushed for a registration, the newest kept.
extension SQLitePushTransaction {
    func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) throws -> Bool {
        // One statement: a new key is inserted, one last seen before `since` seen again now; a key seen
        // since changes nothing, and that is a copy.
        try database.execute(
            """
            INSERT INTO sightings (registration_id, key, seen_at) VALUES (?1, ?2, ?3)
            ON CONFLICT (registration_id, key) DO UPDATE SET seen_at = excluded.seen_at WHERE seen_at < ?4
            """, [.integer(registrationID), .text(key), .integer(at), .integer(since)])
        guard database.changes == 1 else { return false }
        try database.execute(
            """
            DELETE FROM sightings WHERE rowid IN (SELECT rowid FROM sightings WHERE registration_id = ?
                ORDER BY seen_at DESC, rowid DESC LIMIT -1 OFFSET ?)
            """, [.integer(registrationID), .integer(Int64(limits.sightingsPerRegistration))])
        return true
    }
}
