import Foundation
import Synchronization

/// The push store on SQLite: one connection behind a mutex, used on the caller's thread.
///
/// Not an actor on a queue of its own: measured (apush-bench), each hop to such a queue and back cost
/// about 25 µs of thread wake-ups, a third of a whole seal, and a publish makes several store calls.
/// The statements themselves take microseconds (WAL, synchronous=NORMAL: no fsync on commit), so
/// holding a thread of the pool for them costs less than handing the work over.
///
/// Tokens are stored (the upstream node must be known when a held push goes out) but never logged;
/// the file is created 0600. No message text is ever stored: held notices are metadata only.
public final class SQLitePushStore: PushStore {
    private let connection: Mutex<Database>

    public init(_ location: DatabaseLocation) throws {
        let database = try Database(location)
        try database.migrate(Self.migrations)
        connection = Mutex(database)
    }

    /// Runs `body` with the connection, one caller at a time.
    private func locked<T: Sendable>(_ body: (Database) throws -> T) throws -> T {
        try connection.withLock { database in try body(database) }
    }

    /// Registration and retry ids are AUTOINCREMENT so a removed one's id is never handed out again: work
    /// still in flight for it (a held window, a push's outcome, a retry timer) must not land on another.
    static let migrations = [
        Migration(version: 1, sql: """
            CREATE TABLE registrations (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                domain TEXT NOT NULL,
                token TEXT NOT NULL,
                push_module TEXT NOT NULL,
                account TEXT,
                device_key BLOB NOT NULL,
                calls TEXT NOT NULL,
                wants_reads INTEGER NOT NULL,
                collapse_key BLOB NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                last_push_at INTEGER,
                last_error TEXT,
                last_error_at INTEGER,
                last_wake_at INTEGER,
                push_count INTEGER NOT NULL DEFAULT 0,
                error_count INTEGER NOT NULL DEFAULT 0,
                UNIQUE (domain, token)
            );
            CREATE INDEX registrations_by_account ON registrations (account);
            CREATE TABLE tombstones (
                token TEXT NOT NULL,
                push_module TEXT NOT NULL,
                buried_at INTEGER NOT NULL,
                PRIMARY KEY (token, push_module)
            );
            CREATE TABLE chats (
                registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                chat TEXT NOT NULL,
                count INTEGER NOT NULL,
                last_message_at INTEGER,
                window_ends_at INTEGER,
                window_ms INTEGER NOT NULL,
                held TEXT,
                noticed_since_read INTEGER NOT NULL,
                last_read_push_at INTEGER,
                PRIMARY KEY (registration_id, chat)
            );
            CREATE INDEX chats_by_window_end ON chats (window_ends_at) WHERE window_ends_at IS NOT NULL;
            CREATE TABLE sightings (
                registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                key TEXT NOT NULL,
                seen_at INTEGER NOT NULL,
                PRIMARY KEY (registration_id, key)
            );
            CREATE TABLE calls (
                registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                sid TEXT NOT NULL,
                chat TEXT NOT NULL,
                caller TEXT NOT NULL,
                media TEXT NOT NULL,
                at INTEGER NOT NULL,
                PRIMARY KEY (registration_id, sid)
            );
            CREATE TABLE retries (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                summary TEXT NOT NULL,
                kind TEXT NOT NULL,
                collapse_chat TEXT,
                attempts INTEGER NOT NULL,
                next_at INTEGER NOT NULL,
                deadline INTEGER NOT NULL
            );
            CREATE INDEX retries_by_next ON retries (next_at);
            CREATE INDEX retries_by_registration ON retries (registration_id);
            CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
            CREATE TABLE unknown_node_answers (at INTEGER NOT NULL);
            CREATE TABLE policies (account TEXT PRIMARY KEY, document TEXT NOT NULL);
            """),
        // The retries table is also the outbox (every push is kept there until its answer is recorded):
        // due calls are claimed first, and expired items are found without a scan.
        Migration(version: 2, sql: """
            CREATE INDEX retries_calls_by_next ON retries (next_at) WHERE kind = 'call';
            CREATE INDEX retries_by_deadline ON retries (deadline);
            """),
    ]

    // MARK: Registrations

    public func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration {
        try locked { database in
            try database.transaction { database in
                if let existing = try database.query("SELECT * FROM registrations WHERE domain = ? AND token = ?",
                                                     [.text(request.domain), .text(request.token)]).first {
                    let old = try Self.registration(existing)
                    // The server echoes the same options on every publish: most calls change nothing.
                    if old.pushModule == request.pushModule, old.deviceKey == request.deviceKey,
                       old.calls == request.calls, old.wantsReads == request.wantsReads,
                       request.account == nil || request.account == old.account {
                        return old
                    }
                    let collapseKey = old.deviceKey == request.deviceKey ? old.collapseKey : freshCollapseKey
                    try database.execute("""
                        UPDATE registrations SET push_module = ?, account = ?, device_key = ?, calls = ?,
                            wants_reads = ?, collapse_key = ?, updated_at = ? WHERE id = ?
                        """, [.text(request.pushModule), Self.optional(request.account ?? old.account),
                              .blob(request.deviceKey), .text(request.calls.rawValue), SQLValue(request.wantsReads),
                              .blob(collapseKey), .integer(now), .integer(old.id)])
                    var updated = old
                    updated.pushModule = request.pushModule
                    updated.account = request.account ?? old.account
                    updated.deviceKey = request.deviceKey
                    updated.calls = request.calls
                    updated.wantsReads = request.wantsReads
                    updated.collapseKey = collapseKey
                    return updated
                }
                try database.execute("""
                    INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                        collapse_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(request.domain), .text(request.token), .text(request.pushModule),
                          Self.optional(request.account), .blob(request.deviceKey), .text(request.calls.rawValue),
                          SQLValue(request.wantsReads), .blob(freshCollapseKey), .integer(now), .integer(now)])
                return Registration(id: database.lastInsertRowID, domain: request.domain, token: request.token,
                                    pushModule: request.pushModule, account: request.account,
                                    deviceKey: request.deviceKey, calls: request.calls, wantsReads: request.wantsReads,
                                    collapseKey: freshCollapseKey, createdAt: now)
            }
        }
    }

    public func registration(domain: String, token: String) async throws -> Registration? {
        try locked { database in
            try database.query("SELECT * FROM registrations WHERE domain = ? AND token = ?", [.text(domain), .text(token)])
                .first.map(Self.registration)
        }
    }

    public func registration(id: Int64) async throws -> Registration? {
        try locked { database in
            try database.query("SELECT * FROM registrations WHERE id = ?", [.integer(id)]).first.map(Self.registration)
        }
    }

    public func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws -> [Registration] {
        try locked { database in
            let (clause, bindings) = Self.whereClause(filter)
            return try database.query(
                "SELECT * FROM registrations \(clause) ORDER BY id LIMIT ? OFFSET ?",
                bindings + [.integer(Int64(limit)), .integer(Int64(offset))]
            ).map(Self.registration)
        }
    }

    public func countRegistrations(matching filter: RegistrationFilter) async throws -> Int {
        try locked { database in
            let (clause, bindings) = Self.whereClause(filter)
            return Int(try database.query("SELECT count(*) AS n FROM registrations \(clause)", bindings).first?
                .int("n") ?? 0)
        }
    }

    /// The filter as a fixed set of SQL strings (each is prepared once and cached).
    private static func whereClause(_ filter: RegistrationFilter) -> (String, [SQLValue]) {
        ("WHERE (?1 IS NULL OR account = ?1) AND (?2 IS NULL OR domain = ?2) AND (?3 IS NULL OR push_module = ?3)",
         [optional(filter.account), optional(filter.domain), optional(filter.pushModule)])
    }

    public func removeRegistration(id: Int64) async throws {
        try locked { database in
            try database.execute("DELETE FROM registrations WHERE id = ?", [.integer(id)])
        }
    }

    public func removeRegistrations(domain: String, account: String, token: String?) async throws -> [Registration] {
        try locked { database in
            try database.transaction { database in
                let rows = try database.query("""
                    SELECT * FROM registrations WHERE domain = ? AND account = ? AND (?3 IS NULL OR token = ?3)
                    """, [.text(domain), .text(account), Self.optional(token)])
                for row in rows {
                    try database.execute("DELETE FROM registrations WHERE id = ?", [row["id"]])
                }
                return try rows.map(Self.registration)
            }
        }
    }

    public func recordPush(registrationID: Int64, at: Timestamp, error: String?) async throws {
        try locked { database in try Self.recordPush(registrationID: registrationID, at: at, error: error, in: database) }
    }

    private static func recordPush(registrationID: Int64, at: Timestamp, error: String?, in database: Database) throws {
        if let error {
            try database.execute("""
                UPDATE registrations SET last_error = ?, last_error_at = ?, error_count = error_count + 1
                WHERE id = ?
                """, [.text(error), .integer(at), .integer(registrationID)])
        } else {
            try database.execute("""
                UPDATE registrations SET last_push_at = ?, push_count = push_count + 1 WHERE id = ?
                """, [.integer(at), .integer(registrationID)])
        }
    }

    public func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) async throws -> Bool {
        try locked { database in
            try database.execute("""
                UPDATE registrations SET last_wake_at = ?1
                WHERE id = ?2 AND (last_wake_at IS NULL OR last_wake_at <= ?3)
                """, [.integer(at), .integer(registrationID), .integer(since)])
            return database.changes > 0
        }
    }

    // MARK: Tombstones

    public func bury(token: String, pushModule: String, at: Timestamp) async throws {
        try locked { database in
            try database.execute("INSERT OR REPLACE INTO tombstones (token, push_module, buried_at) VALUES (?, ?, ?)",
                                 [.text(token), .text(pushModule), .integer(at)])
        }
    }

    public func isBuried(token: String, pushModule: String?, since: Timestamp) async throws -> Bool {
        try locked { database in
            try !database.query("""
                SELECT 1 FROM tombstones WHERE token = ?1 AND (?2 IS NULL OR push_module = ?2) AND buried_at >= ?3
                """, [.text(token), Self.optional(pushModule), .integer(since)]).isEmpty
        }
    }

    public func exhume(token: String, pushModule: String) async throws {
        try locked { database in
            try database.execute("DELETE FROM tombstones WHERE token = ? AND push_module = ?",
                                 [.text(token), .text(pushModule)])
        }
    }

    // MARK: Chats

    public func updateChat<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @Sendable (inout ChatState?) -> Result
    ) async throws -> Result {
        try locked { database in
            try database.transaction { database in
                try Self.updateChat(registrationID: registrationID, chat: chat, in: database, change)
            }
        }
    }

    private static func updateChat<Result>(registrationID: Int64, chat: String, in database: Database,
                                           _ change: (inout ChatState?) -> Result) throws -> Result {
        var state = try database.query("SELECT * FROM chats WHERE registration_id = ? AND chat = ?",
                                       [.integer(registrationID), .text(chat)]).first.map(Self.chatState)
        let before = state
        let result = change(&state)
        if state != before {
            if var state {
                // The row is the one asked for, whatever the closure wrote into the value.
                state.registrationID = registrationID
                state.chat = chat
                try Self.save(state, in: database)
            } else {
                try database.execute("DELETE FROM chats WHERE registration_id = ? AND chat = ?",
                                     [.integer(registrationID), .text(chat)])
            }
        }
        return result
    }

    public func chats(registrationID: Int64) async throws -> [ChatState] {
        try locked { database in
            try database.query("SELECT * FROM chats WHERE registration_id = ? ORDER BY chat", [.integer(registrationID)])
                .map(Self.chatState)
        }
    }

    public func dueWindows(at now: Timestamp, limit: Int) async throws -> [ChatState] {
        try locked { database in
            try database.query("""
                SELECT * FROM chats WHERE window_ends_at IS NOT NULL AND window_ends_at <= ?
                ORDER BY window_ends_at LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]).map(Self.chatState)
        }
    }

    public func nextWindowEnd() async throws -> Timestamp? {
        try locked { database in
            try database.query("SELECT min(window_ends_at) AS next FROM chats WHERE window_ends_at IS NOT NULL").first?.int("next")
        }
    }

    private static func save(_ state: ChatState, in database: Database) throws {
        let held = try state.held.map { SQLValue.text(String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) }
        try database.execute("""
            INSERT OR REPLACE INTO chats (registration_id, chat, count, last_message_at, window_ends_at, window_ms,
                held, noticed_since_read, last_read_push_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(state.registrationID), .text(state.chat), .integer(Int64(state.count)),
                  optional(state.lastMessageAt), optional(state.windowEndsAt), .integer(state.windowMilliseconds),
                  held ?? .null, SQLValue(state.noticedSinceRead), optional(state.lastReadPushAt)])
    }

    // MARK: Dedupe

    public func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) async throws -> Bool {
        try locked { database in
            try database.transaction { database in
                let seen = try database.query("""
                    SELECT seen_at FROM sightings WHERE registration_id = ? AND key = ? AND seen_at >= ?
                    """, [.integer(registrationID), .text(key), .integer(since)])
                guard seen.isEmpty else { return false }
                try database.execute("INSERT OR REPLACE INTO sightings (registration_id, key, seen_at) VALUES (?, ?, ?)",
                                     [.integer(registrationID), .text(key), .integer(at)])
                return true
            }
        }
    }

    // MARK: Calls

    public func rememberCall(_ call: PendingCall) async throws {
        try locked { database in
            try database.execute("""
                INSERT OR REPLACE INTO calls (registration_id, sid, chat, caller, media, at) VALUES (?, ?, ?, ?, ?, ?)
                """, [.integer(call.registrationID), .text(call.sid), .text(call.chat), .text(call.caller),
                      .text(call.media.joined(separator: " ")), .integer(call.at)])
        }
    }

    public func takeCall(registrationID: Int64, sid: String, chat: String?) async throws -> PendingCall? {
        try locked { database in
            try database.transaction { database in
                guard let row = try database.query(
                    "SELECT * FROM calls WHERE registration_id = ? AND sid = ? AND (? IS NULL OR chat = ?)",
                    [.integer(registrationID), .text(sid), chat.map(SQLValue.text) ?? .null,
                     chat.map(SQLValue.text) ?? .null]).first else { return nil }
                try database.execute("DELETE FROM calls WHERE registration_id = ? AND sid = ?",
                                     [.integer(registrationID), .text(sid)])
                return PendingCall(registrationID: registrationID, sid: sid, chat: row.string("chat") ?? "",
                                   caller: row.string("caller") ?? "",
                                   media: (row.string("media") ?? "").split(separator: " ").map(String.init),
                                   at: row.int("at") ?? 0)
            }
        }
    }

    // MARK: Retries

    @discardableResult
    public func enqueueRetry(_ item: RetryItem) async throws -> Int64 {
        try locked { database in try Self.insert(item, in: database) }
    }

    private static func insert(_ item: RetryItem, in database: Database) throws -> Int64 {
        try database.execute("""
            INSERT INTO retries (registration_id, summary, kind, collapse_chat, attempts, next_at, deadline)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.integer(item.registrationID), .text(item.summary), .text(item.kind), optional(item.collapseChat),
                  .integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.deadline)])
        return database.lastInsertRowID
    }

    public func nextRetry() async throws -> Timestamp? {
        try locked { database in
            try database.query("SELECT min(next_at) AS next FROM retries").first?.int("next")
        }
    }

    public func updateRetry(_ item: RetryItem) async throws {
        try locked { database in
            try database.execute("UPDATE retries SET attempts = ?, next_at = ? WHERE id = ?",
                                 [.integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.id)])
        }
    }

    public func deleteRetry(id: Int64) async throws {
        try locked { database in
            try database.execute("DELETE FROM retries WHERE id = ?", [.integer(id)])
        }
    }

    // MARK: Counters

    public func increment(_ counters: [String: Int64]) async throws {
        try locked { database in
            try database.transaction { database in
                for (name, amount) in counters {
                    try database.execute("""
                        INSERT INTO counters (name, value) VALUES (?, ?)
                        ON CONFLICT (name) DO UPDATE SET value = value + excluded.value
                        """, [.text(name), .integer(amount)])
                }
            }
        }
    }

    public func counters() async throws -> [String: Int64] {
        try locked { database in
            var result: [String: Int64] = [:]
            for row in try database.query("SELECT name, value FROM counters") {
                result[row.string("name") ?? ""] = row.int("value") ?? 0
            }
            return result
        }
    }

    // MARK: Unknown nodes

    public func recordUnknownNodeAnswer(at: Timestamp) async throws {
        try locked { database in
            try database.execute("INSERT INTO unknown_node_answers (at) VALUES (?)", [.integer(at)])
        }
    }

    public func unknownNodeAnswers(since: Timestamp) async throws -> Int {
        try locked { database in
            Int(try database.query("SELECT count(*) AS n FROM unknown_node_answers WHERE at >= ?", [.integer(since)])
                .first?.int("n") ?? 0)
        }
    }

    // MARK: Policies

    /// The defaults are stored under the empty account name.
    public func policy(account: String?) async throws -> String? {
        try locked { database in
            try database.query("SELECT document FROM policies WHERE account = ?", [.text(account ?? "")]).first?
                .string("document")
        }
    }

    public func setPolicy(account: String?, json: String?) async throws {
        try locked { database in
            if let json {
                try database.execute("INSERT OR REPLACE INTO policies (account, document) VALUES (?, ?)",
                                     [.text(account ?? ""), .text(json)])
            } else {
                try database.execute("DELETE FROM policies WHERE account = ?", [.text(account ?? "")])
            }
        }
    }

    // MARK: Maintenance

    public func prune(tombstonesBefore: Timestamp, sightingsBefore: Timestamp, callsBefore: Timestamp,
                      unknownAnswersBefore: Timestamp, quietChatsBefore: Timestamp) async throws {
        try locked { database in
            try database.transaction { database in
                try database.execute("DELETE FROM tombstones WHERE buried_at < ?", [.integer(tombstonesBefore)])
                try database.execute("DELETE FROM sightings WHERE seen_at < ?", [.integer(sightingsBefore)])
                try database.execute("DELETE FROM calls WHERE at < ?", [.integer(callsBefore)])
                try database.execute("DELETE FROM unknown_node_answers WHERE at < ?", [.integer(unknownAnswersBefore)])
                try database.execute("""
                    DELETE FROM chats WHERE window_ends_at IS NULL AND held IS NULL
                        AND coalesce(last_message_at, 0) < ?1 AND coalesce(last_read_push_at, 0) < ?1
                    """, [.integer(quietChatsBefore)])
            }
        }
    }

    // MARK: Rows

    private static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
    private static func optional(_ number: Int64?) -> SQLValue { number.map(SQLValue.integer) ?? .null }

    private static func registration(_ row: Row) throws -> Registration {
        Registration(
            id: row.int("id") ?? 0, domain: row.string("domain") ?? "", token: row.string("token") ?? "",
            pushModule: row.string("push_module") ?? "", account: row.string("account"),
            deviceKey: row.blob("device_key") ?? [], calls: CallsMode(rawValue: row.string("calls") ?? "") ?? .none,
            wantsReads: row.bool("wants_reads") ?? false, collapseKey: row.blob("collapse_key") ?? [],
            createdAt: row.int("created_at") ?? 0, lastPushAt: row.int("last_push_at"),
            lastError: row.string("last_error"), lastErrorAt: row.int("last_error_at"),
            lastWakeAt: row.int("last_wake_at"), pushCount: row.int("push_count") ?? 0,
            errorCount: row.int("error_count") ?? 0)
    }

    private static func retryItem(_ row: Row) -> RetryItem {
        RetryItem(id: row.int("id") ?? 0, registrationID: row.int("registration_id") ?? 0,
                  summary: row.string("summary") ?? "", kind: row.string("kind") ?? "",
                  collapseChat: row.string("collapse_chat"), attempts: Int(row.int("attempts") ?? 0),
                  nextAt: row.int("next_at") ?? 0, deadline: row.int("deadline") ?? 0)
    }

    private static func chatState(_ row: Row) throws -> ChatState {
        let held = try row.string("held").map { try JSONDecoder().decode(HeldNotice.self, from: Data($0.utf8)) }
        return ChatState(
            registrationID: row.int("registration_id") ?? 0, chat: row.string("chat") ?? "",
            count: Int(row.int("count") ?? 0), lastMessageAt: row.int("last_message_at"),
            windowEndsAt: row.int("window_ends_at"), windowMilliseconds: row.int("window_ms") ?? 10_000,
            held: held, noticedSinceRead: row.bool("noticed_since_read") ?? false,
            lastReadPushAt: row.int("last_read_push_at"))
    }
}

// MARK: Outbox

extension SQLitePushStore {
    public func updateChatAndEnqueue<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @Sendable (inout ChatState?) -> (Result, RetryItem?)
    ) async throws -> (Result, RetryItem?) {
        try locked { database in
            try database.transaction { database in
                var (result, item) = try Self.updateChat(registrationID: registrationID, chat: chat, in: database, change)
                if let stored = item { item?.id = try Self.insert(stored, in: database) }
                return (result, item)
            }
        }
    }

    public func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64)
        async throws {
        try locked { database in
            try database.transaction { database in
                try Self.recordPush(registrationID: registrationID, at: at, error: error, in: database)
                try database.execute("DELETE FROM retries WHERE id = ?", [.integer(retryID)])
            }
        }
    }

    public func claimDueRetries(at now: Timestamp, limit: Int, leaseUntil: Timestamp) async throws -> [RetryItem] {
        try locked { database in
            try database.transaction { database in
                let due = "next_at <= ?1 AND deadline >= ?1 ORDER BY next_at, id LIMIT ?2"
                let calls = try database.query("SELECT * FROM retries WHERE kind = 'call' AND \(due)",
                                               [.integer(now), .integer(Int64(limit))]).map(Self.retryItem)
                let others = calls.count < limit
                    ? try database.query("SELECT * FROM retries WHERE kind <> 'call' AND \(due)",
                                         [.integer(now), .integer(Int64(limit - calls.count))]).map(Self.retryItem)
                    : []
                var claimed = calls + others
                for index in claimed.indices {
                    claimed[index].nextAt = leaseUntil
                    try database.execute("UPDATE retries SET next_at = ? WHERE id = ?",
                                         [.integer(leaseUntil), .integer(claimed[index].id)])
                }
                return claimed
            }
        }
    }

    public func deleteExpiredRetries(at now: Timestamp) async throws -> [String: Int] {
        try locked { database in
            try database.transaction { database in
                // A leased item is in flight until its lease ends: its answer may still come.
                let expired = "deadline < ?1 AND next_at <= ?1"
                var counts: [String: Int] = [:]
                for row in try database.query("SELECT kind, count(*) AS n FROM retries WHERE \(expired) GROUP BY kind",
                                              [.integer(now)]) {
                    counts[row.string("kind") ?? "", default: 0] += Int(row.int("n") ?? 0)
                }
                if !counts.isEmpty {
                    try database.execute("DELETE FROM retries WHERE \(expired)", [.integer(now)])
                }
                return counts
            }
        }
    }
}
