import SQLCore
import SQLite

/// Pushed calls that may still be retracted (then a missed-call push goes out).
extension SQLitePushTransaction {
    func rememberCall(_ call: PendingCall) throws {
        try database.execute(
            """
            INSERT OR REPLACE INTO calls (registration_id, sid, chat, caller, media, at) VALUES (?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(call.registrationID), .text(call.sid), .text(call.chat), .text(call.caller),
                .text(call.media.joined(separator: " ")), .integer(call.at),
            ])
        try database.execute(
            """
            DELETE FROM calls WHERE rowid IN (SELECT rowid FROM calls WHERE registration_id = ?
                ORDER BY at DESC, rowid DESC LIMIT -1 OFFSET ?)
            """, [.integer(call.registrationID), .integer(Int64(limits.callsPerRegistration))])
    }

    func takeCall(registrationID: Int64, sid: String, chat: String?) throws -> PendingCall? {
        guard
            let row = try database.query(
                "SELECT * FROM calls WHERE registration_id = ? AND sid = ? AND (? IS NULL OR chat = ?)",
                [
                    .integer(registrationID), .text(sid), chat.map(SQLValue.text) ?? .null,
                    chat.map(SQLValue.text) ?? .null,
                ]
            ).first
        else { return nil }
        try database.execute(
            "DELETE FROM calls WHERE registration_id = ? AND sid = ?",
            [.integer(registrationID), .text(sid)])
        return PendingCall(
            registrationID: registrationID, sid: sid, chat: try row.decode("chat", \.stringValue),
            caller: try row.decode("caller", \.stringValue),
            media: try row.decode("media", \.stringValue).split(separator: " ").map(String.init),
            at: try row.decode("at", \.int64Value))
    }
}
