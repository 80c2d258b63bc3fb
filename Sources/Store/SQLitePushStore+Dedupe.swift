import SQLite

/// Dedupe: the keys of messages already pushed for a registration, the newest kept.
extension SQLitePushTransaction {
    func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) throws -> Bool {
        let seen = try database.query(
            """
            SELECT seen_at FROM sightings WHERE registration_id = ? AND key = ? AND seen_at >= ?
            """, [.integer(registrationID), .text(key), .integer(since)])
        guard seen.isEmpty else { return false }
        try database.execute(
            "INSERT OR REPLACE INTO sightings (registration_id, key, seen_at) VALUES (?, ?, ?)",
            [.integer(registrationID), .text(key), .integer(at)])
        try database.execute(
            """
            DELETE FROM sightings WHERE rowid IN (SELECT rowid FROM sightings WHERE registration_id = ?
                ORDER BY seen_at DESC, rowid DESC LIMIT -1 OFFSET ?)
            """, [.integer(registrationID), .integer(Int64(limits.sightingsPerRegistration))])
        return true
    }
}
