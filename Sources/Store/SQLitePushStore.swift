public import SQLite
import Dispatch
import Foundation

/// The push store on SQLite: one connection, used only on a serial queue of its own.
///
/// Statements block (on a busy lock for up to 5 s, on a slow disk), so they run on the store's own
/// thread, never on a thread of the cooperative pool: a caller suspends until its statement is done.
/// Each call is one hop there and back (apush-bench: 10-25 µs against 2-9 µs on the caller's thread,
/// on a loaded 2-core machine), so a call does all of one step's reads and writes at once, in one
/// transaction where they must be atomic.
///
/// Tokens are stored (the upstream node must be known when a held push goes out) but never logged;
/// the file is created 0600. No message text is ever stored: held notices are metadata only.
///
/// A location that can never work (`UnusableStoreError`) fails at start. A file system that refuses
/// for now (read-only, full: `SQLiteError.mayPass`) leaves the store unavailable instead: every call
/// fails at once with `StoreUnavailableError`, and the first call `reopenInterval` after the last try
/// opens and migrates it, so the store comes back by itself when the disk does.
public final class SQLitePushStore: PushStore {
    private enum Connection {
        case open(Database)
        case unavailable(StoreUnavailableError, triedAt: ContinuousClock.Instant)
    }

    /// Where the store lives. Its own type, so a caller chooses the location without the SQLite core.
    public enum Location: Sendable, Hashable {
        /// A private database that lives as long as the store.
        case memory
        /// A database file, created owner-only (0600) if missing.
        case file(path: String)

        var database: DatabaseLocation {
            switch self {
            case .memory: .memory
            case .file(let path): .file(path: path)
            }
        }
    }

    /// Touched only on `queue`, which is what makes the store `Sendable`.
    private nonisolated(unsafe) var connection: Connection
    private let queue = DispatchQueue(label: "apush.store")
    private let location: Location
    private let reopenInterval: Duration
    public let limits: StoreLimits
    /// Why the store could not be opened at start (it is opened on use later), nil if it was.
    public let unavailableAtStart: StoreUnavailableError?

    public init(_ location: Location, limits: StoreLimits = StoreLimits(),
                reopenInterval: Duration = .seconds(2)) throws(UnusableStoreError) {
        try location.checkUsable()
        self.location = location
        self.limits = limits
        self.reopenInterval = reopenInterval
        do {
            connection = .open(try Self.open(location))
            unavailableAtStart = nil
        } catch let error as SQLiteError where error.mayPass {
            let unavailable = StoreUnavailableError(cause: error)
            unavailableAtStart = unavailable
            connection = .unavailable(unavailable, triedAt: .now)
        } catch {
            throw UnusableStoreError(reason: "\(error)")
        }
    }

    private static func open(_ location: Location) throws -> Database {
        let database = try Database(location.database)
        try database.migrate(migrations)
        return database
    }

    /// Runs `body` with the connection on the store's queue. A transaction that a failure left open is
    /// rolled back, so the next call starts clean.
    func run<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result {
                    let database = try self.openedDatabase()
                    do {
                        return try body(database)
                    } catch {
                        database.rollBackIfOpen()
                        throw error
                    }
                })
            }
        }
    }

    /// The connection; an unavailable store is opened again (and migrated) at most once per
    /// `reopenInterval`, and in between fails at once, so a broken disk is not hammered. On `queue` only.
    private func openedDatabase() throws -> Database {
        switch connection {
        case .open(let database):
            return database
        case .unavailable(let error, let triedAt):
            let now = ContinuousClock.now
            guard triedAt.duration(to: now) >= reopenInterval else { throw error }
            do {
                let database = try Self.open(location)
                connection = .open(database)
                return database
            } catch {
                let error = StoreUnavailableError(cause: error)
                connection = .unavailable(error, triedAt: now)
                throw error
            }
        }
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
        // A registration is (domain, account, token), and a tombstone has a scope: `*` for a dead token
        // (every account), `''` for the registration with no account, else the account. SQLite cannot
        // drop a UNIQUE constraint, so both tables are rebuilt (SQLite's 12 steps: foreign keys off, so
        // dropping the old registrations does not cascade to chats, sightings, calls and retries; every
        // row kept with its id, and the AUTOINCREMENT high-water mark too). Old tombstones were dead
        // tokens or removals of the token's only registration: they stay for every account.
        // `sizes` keeps the totals that caps check, so no check counts a whole table.
        Migration(version: 2, rebuildsTables: true, sql: """
            CREATE TABLE registrations_v2 (
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
                error_count INTEGER NOT NULL DEFAULT 0
            );
            INSERT INTO registrations_v2 (id, domain, token, push_module, account, device_key, calls, wants_reads,
                collapse_key, created_at, updated_at, last_push_at, last_error, last_error_at, last_wake_at,
                push_count, error_count)
            SELECT id, domain, token, push_module, account, device_key, calls, wants_reads, collapse_key,
                created_at, updated_at, last_push_at, last_error, last_error_at, last_wake_at, push_count,
                error_count FROM registrations;
            DELETE FROM sqlite_sequence WHERE name = 'registrations_v2';
            INSERT INTO sqlite_sequence (name, seq)
                SELECT 'registrations_v2', seq FROM sqlite_sequence WHERE name = 'registrations';
            DROP TABLE registrations;
            ALTER TABLE registrations_v2 RENAME TO registrations;
            CREATE UNIQUE INDEX registrations_by_token ON registrations (token, domain, ifnull(account, ''));
            CREATE INDEX registrations_by_account ON registrations (account);

            CREATE TABLE tombstones_v2 (
                token TEXT NOT NULL,
                push_module TEXT NOT NULL,
                scope TEXT NOT NULL,
                buried_at INTEGER NOT NULL,
                PRIMARY KEY (token, push_module, scope)
            );
            INSERT INTO tombstones_v2 (token, push_module, scope, buried_at)
                SELECT token, push_module, '*', buried_at FROM tombstones;
            DROP TABLE tombstones;
            ALTER TABLE tombstones_v2 RENAME TO tombstones;

            CREATE INDEX sightings_by_age ON sightings (registration_id, seen_at);
            CREATE INDEX calls_by_age ON calls (registration_id, at);

            CREATE TABLE sizes (name TEXT PRIMARY KEY, count INTEGER NOT NULL);
            INSERT INTO sizes (name, count) SELECT 'registrations', count(*) FROM registrations;
            INSERT INTO sizes (name, count) SELECT 'retries', count(*) FROM retries;
            CREATE TRIGGER registrations_added AFTER INSERT ON registrations
                BEGIN UPDATE sizes SET count = count + 1 WHERE name = 'registrations'; END;
            CREATE TRIGGER registrations_removed AFTER DELETE ON registrations
                BEGIN UPDATE sizes SET count = count - 1 WHERE name = 'registrations'; END;
            CREATE TRIGGER retries_added AFTER INSERT ON retries
                BEGIN UPDATE sizes SET count = count + 1 WHERE name = 'retries'; END;
            CREATE TRIGGER retries_removed AFTER DELETE ON retries
                BEGIN UPDATE sizes SET count = count - 1 WHERE name = 'retries'; END;
            """),
        // The retries table is also the outbox (every push is kept there until its answer is recorded):
        // due calls are claimed first, and expired items are found without a scan.
        Migration(version: 3, sql: """
            CREATE INDEX retries_calls_by_next ON retries (next_at) WHERE kind = 'call';
            CREATE INDEX retries_by_deadline ON retries (deadline);
            """),
    ]

    // MARK: Registrations

    public func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration {
        let limits = limits
        return try await run { database in
            try database.transaction { database in
                try Self.register(request, freshCollapseKey: freshCollapseKey, now: now, limits: limits, in: database)
            }
        }
    }

    public func registerUnlessBuried(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
                                     buriedSince: Timestamp) async throws -> Registration? {
        let limits = limits
        return try await run { database in
            try database.transaction { database in
                guard !(try Self.isBuried(token: request.token, pushModule: request.pushModule,
                                          account: Self.account(of: request), since: buriedSince, in: database)) else {
                    return nil
                }
                return try Self.register(request, freshCollapseKey: freshCollapseKey, now: now, limits: limits,
                                         in: database)
            }
        }
    }

    /// The request's account; an empty name is none.
    private static func account(of request: RegistrationRequest) -> String? {
        request.account.flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
                                 limits: StoreLimits, in database: Database) throws -> Registration {
        let account = Self.account(of: request)
        if let old = try registration(domain: request.domain, token: request.token, account: account,
                                      deviceKey: request.deviceKey, in: database) {
            // The server echoes the same options on every publish: most calls change nothing.
            if old.pushModule == request.pushModule, old.deviceKey == request.deviceKey,
               old.calls == request.calls, old.wantsReads == request.wantsReads,
               account == nil || account == old.account {
                return old
            }
            if old.account == nil, let account {
                try makeRoom(forAccount: account, limits: limits, in: database)
            }
            let collapseKey = old.deviceKey == request.deviceKey ? old.collapseKey : freshCollapseKey
            var updated = old
            updated.pushModule = request.pushModule
            updated.account = account ?? old.account
            updated.deviceKey = request.deviceKey
            updated.calls = request.calls
            updated.wantsReads = request.wantsReads
            updated.collapseKey = collapseKey
            try database.execute("""
                UPDATE registrations SET push_module = ?, account = ?, device_key = ?, calls = ?,
                    wants_reads = ?, collapse_key = ?, updated_at = ? WHERE id = ?
                """, [.text(updated.pushModule), Self.optional(updated.account), .blob(updated.deviceKey),
                      .text(updated.calls.rawValue), SQLValue(updated.wantsReads), .blob(collapseKey),
                      .integer(now), .integer(old.id)])
            return updated
        }
        if let account {
            try makeRoom(forAccount: account, limits: limits, in: database)
        }
        guard try size("registrations", in: database) < limits.registrations else {
            throw StoreCapacityError(collection: "registrations", limit: limits.registrations)
        }
        try database.execute("""
            INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                collapse_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(request.domain), .text(request.token), .text(request.pushModule),
                  Self.optional(account), .blob(request.deviceKey), .text(request.calls.rawValue),
                  SQLValue(request.wantsReads), .blob(freshCollapseKey), .integer(now), .integer(now)])
        return Registration(id: database.lastInsertRowID, domain: request.domain, token: request.token,
                            pushModule: request.pushModule, account: account,
                            deviceKey: request.deviceKey, calls: request.calls, wantsReads: request.wantsReads,
                            collapseKey: freshCollapseKey, createdAt: now)
    }

    /// Makes room for one more registration of `account` by removing its least recently used ones.
    private static func makeRoom(forAccount account: String, limits: StoreLimits, in database: Database) throws {
        let held = try database.queryOne("SELECT count(*) AS n FROM registrations WHERE account = ?", [.text(account)])
            .decode("n", \.int64Value)
        let excess = held - Int64(limits.registrationsPerAccount) + 1
        guard excess > 0 else { return }
        try database.execute("""
            DELETE FROM registrations WHERE id IN (SELECT id FROM registrations WHERE account = ?
                ORDER BY max(updated_at, ifnull(last_push_at, 0)), id LIMIT ?)
            """, [.text(account), .integer(excess)])
    }

    /// A total kept by the `sizes` triggers.
    private static func size(_ name: String, in database: Database) throws -> Int {
        Int(try database.queryOne("SELECT count FROM sizes WHERE name = ?", [.text(name)]).decode("count", \.int64Value))
    }

    public func registration(domain: String, token: String, account: String?) async throws -> Registration? {
        try await run { database in
            try Self.registration(domain: domain, token: token, account: account, deviceKey: nil, in: database)
        }
    }

    /// The choice documented on `PushStore.registration(domain:token:account:)`, in one ORDER BY. A
    /// stock publish's options carry a device key: among several accounts, the one with that key is the
    /// one it speaks for.
    private static func registration(domain: String, token: String, account: String?, deviceKey: [UInt8]?,
                                     in database: Database) throws -> Registration? {
        try database.query("""
            SELECT * FROM registrations WHERE token = ?1 AND domain = ?2 AND (?3 IS NULL OR account = ?3 OR account IS NULL)
            ORDER BY account IS ?3 DESC, account IS NULL DESC, device_key IS ?4 DESC, updated_at DESC, id DESC LIMIT 1
            """, [.text(token), .text(domain), Self.optional(account), deviceKey.map(SQLValue.blob) ?? .null])
            .first.map(registration)
    }

    public func registration(id: Int64) async throws -> Registration? {
        try await run { database in
            try database.query("SELECT * FROM registrations WHERE id = ?", [.integer(id)]).first.map(Self.registration)
        }
    }

    public func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws -> [Registration] {
        try await run { database in
            let (clause, bindings) = Self.whereClause(filter)
            return try database.query(
                "SELECT * FROM registrations \(clause) ORDER BY id LIMIT ? OFFSET ?",
                bindings + [.integer(Int64(limit)), .integer(Int64(offset))]
            ).map(Self.registration)
        }
    }

    public func countRegistrations(matching filter: RegistrationFilter) async throws -> Int {
        try await run { database in
            let (clause, bindings) = Self.whereClause(filter)
            return Int(try database.queryOne("SELECT count(*) AS n FROM registrations \(clause)", bindings)
                .decode("n", \.int64Value))
        }
    }

    /// The filter as a fixed set of SQL strings (each is prepared once and cached).
    private static func whereClause(_ filter: RegistrationFilter) -> (String, [SQLValue]) {
        ("WHERE (?1 IS NULL OR account = ?1) AND (?2 IS NULL OR domain = ?2) AND (?3 IS NULL OR push_module = ?3)",
         [Self.optional(filter.account), Self.optional(filter.domain), Self.optional(filter.pushModule)])
    }

    public func removeRegistrations(domain: String, account: String, token: String?) async throws -> [Registration] {
        try await run { database in
            try database.transaction { database in
                let rows = try database.query("""
                    SELECT * FROM registrations WHERE domain = ? AND account = ? AND (?3 IS NULL OR token = ?3)
                    """, [.text(domain), .text(account), Self.optional(token)])
                let registrations = try rows.map(Self.registration)
                for registration in registrations {
                    try database.execute("DELETE FROM registrations WHERE id = ?", [.integer(registration.id)])
                }
                return registrations
            }
        }
    }

    @discardableResult
    public func retire(registrationID: Int64, at: Timestamp) async throws -> Registration? {
        try await run { database in
            try database.transaction { database in
                guard let row = try database.query("SELECT * FROM registrations WHERE id = ?",
                                                   [.integer(registrationID)]).first else { return nil }
                let registration = try Self.registration(row)
                try database.execute("DELETE FROM registrations WHERE id = ?", [.integer(registrationID)])
                try Self.bury(token: registration.token, pushModule: registration.pushModule,
                              scope: registration.account ?? Self.accountlessScope, at: at, in: database)
                return registration
            }
        }
    }

    public func buryDeadToken(_ token: String, pushModule: String, at: Timestamp) async throws -> Int {
        try await run { database in
            try database.transaction { database in
                try database.execute("DELETE FROM registrations WHERE token = ? AND push_module = ?",
                                     [.text(token), .text(pushModule)])
                let removed = database.changes
                try Self.bury(token: token, pushModule: pushModule, scope: Self.everyAccountScope, at: at, in: database)
                return removed
            }
        }
    }

    public func recordPush(registrationID: Int64, at: Timestamp, error: String?) async throws {
        try await run { database in try Self.recordPush(registrationID: registrationID, at: at, error: error, in: database) }
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
        try await run { database in
            try database.execute("""
                UPDATE registrations SET last_wake_at = ?
                WHERE id = ? AND (last_wake_at IS NULL OR last_wake_at <= ?)
                """, [.integer(at), .integer(registrationID), .integer(since)])
            return database.changes > 0
        }
    }

    // MARK: Tombstones

    /// The scope of a dead token's tombstone, and of the registration with no account's (accounts are
    /// bare JIDs, never either).
    private static let everyAccountScope = "*"
    private static let accountlessScope = ""

    private static func bury(token: String, pushModule: String, scope: String, at: Timestamp, in database: Database)
        throws {
        try database.execute("""
            INSERT OR REPLACE INTO tombstones (token, push_module, scope, buried_at) VALUES (?, ?, ?, ?)
            """, [.text(token), .text(pushModule), .text(scope), .integer(at)])
    }

    public func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp) async throws
        -> Bool {
        try await run { database in
            try Self.isBuried(token: token, pushModule: pushModule, account: account, since: since, in: database)
        }
    }

    private static func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp,
                                 in database: Database) throws -> Bool {
        !(try database.query("""
            SELECT 1 FROM tombstones WHERE token = ?1 AND (?2 IS NULL OR push_module = ?2)
                AND scope IN (?3, ?4) AND buried_at >= ?5 LIMIT 1
            """, [.text(token), optional(pushModule), .text(everyAccountScope),
                  .text(account ?? accountlessScope), .integer(since)]).isEmpty)
    }

    public func exhume(token: String, pushModule: String, account: String) async throws {
        try await run { database in
            try database.execute("DELETE FROM tombstones WHERE token = ? AND push_module = ? AND scope IN (?, ?)",
                                 [.text(token), .text(pushModule), .text(Self.everyAccountScope), .text(account)])
        }
    }

    // MARK: Chats

    public func updateChat<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @escaping @Sendable (inout ChatState?) -> Result
    ) async throws -> Result {
        let limit = limits.chatsPerRegistration
        return try await run { database in
            try database.transaction { database in
                try Self.updateChat(registrationID: registrationID, chat: chat, limit: limit, in: database, change)
            }
        }
    }

    /// `updateChat` inside a transaction the caller holds. A new chat past the registration's limit
    /// first forgets its quietest chats; if every one is busy, the new chat is not kept (its message is
    /// still pushed by the caller, just not held or counted).
    private static func updateChat<Result>(registrationID: Int64, chat: String, limit: Int, in database: Database,
                                           _ change: (inout ChatState?) -> Result) throws -> Result {
        var state = try database.query("SELECT * FROM chats WHERE registration_id = ? AND chat = ?",
                                       [.integer(registrationID), .text(chat)]).first.map(Self.chatState)
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
            try database.execute("DELETE FROM chats WHERE registration_id = ? AND chat = ?",
                                 [.integer(registrationID), .text(chat)])
        }
        return result
    }

    /// Makes room for a new chat of the registration by forgetting its quietest chats with no open window
    /// and nothing held; false if every one is busy.
    private static func makeRoomForChat(registrationID: Int64, limit: Int, in database: Database) throws -> Bool {
        let held = try database.queryOne("SELECT count(*) AS n FROM chats WHERE registration_id = ?",
                                         [.integer(registrationID)]).decode("n", \.int64Value)
        let excess = held - Int64(limit) + 1
        guard excess > 0 else { return true }
        try database.execute("""
            DELETE FROM chats WHERE rowid IN (SELECT rowid FROM chats
                WHERE registration_id = ? AND window_ends_at IS NULL AND held IS NULL
                ORDER BY max(ifnull(last_message_at, 0), ifnull(last_read_push_at, 0)) LIMIT ?)
            """, [.integer(registrationID), .integer(excess)])
        return Int64(database.changes) == excess
    }

    public func chats(registrationID: Int64) async throws -> [ChatState] {
        try await run { database in
            try database.query("SELECT * FROM chats WHERE registration_id = ? ORDER BY chat", [.integer(registrationID)])
                .map(Self.chatState)
        }
    }

    public func dueWindows(at now: Timestamp, limit: Int) async throws -> [ChatState] {
        try await run { database in
            try database.query("""
                SELECT * FROM chats WHERE window_ends_at IS NOT NULL AND window_ends_at <= ?
                ORDER BY window_ends_at LIMIT ?
                """, [.integer(now), .integer(Int64(limit))]).map(Self.chatState)
        }
    }

    public func nextWindowEnd() async throws -> Timestamp? {
        try await run { database in
            try database.queryOne("SELECT min(window_ends_at) AS next FROM chats WHERE window_ends_at IS NOT NULL")
                .decodeIfPresent("next", \.int64Value)
        }
    }

    private static func save(_ state: ChatState, in database: Database) throws {
        let held = try state.held.map { SQLValue.text(String(decoding: try JSONEncoder().encode($0), as: UTF8.self)) }
        try database.execute("""
            INSERT OR REPLACE INTO chats (registration_id, chat, count, last_message_at, window_ends_at, window_ms,
                held, noticed_since_read, last_read_push_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.integer(state.registrationID), .text(state.chat), .integer(Int64(state.count)),
                  Self.optional(state.lastMessageAt), Self.optional(state.windowEndsAt), .integer(state.windowMilliseconds),
                  held ?? .null, SQLValue(state.noticedSinceRead), Self.optional(state.lastReadPushAt)])
    }

    // MARK: Dedupe

    public func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) async throws -> Bool {
        let limit = limits.sightingsPerRegistration
        return try await run { database in
            try database.transaction { database in
                let seen = try database.query("""
                    SELECT seen_at FROM sightings WHERE registration_id = ? AND key = ? AND seen_at >= ?
                    """, [.integer(registrationID), .text(key), .integer(since)])
                guard seen.isEmpty else { return false }
                try database.execute("INSERT OR REPLACE INTO sightings (registration_id, key, seen_at) VALUES (?, ?, ?)",
                                     [.integer(registrationID), .text(key), .integer(at)])
                try database.execute("""
                    DELETE FROM sightings WHERE rowid IN (SELECT rowid FROM sightings WHERE registration_id = ?
                        ORDER BY seen_at DESC, rowid DESC LIMIT -1 OFFSET ?)
                    """, [.integer(registrationID), .integer(Int64(limit))])
                return true
            }
        }
    }

    // MARK: Calls

    public func rememberCall(_ call: PendingCall) async throws {
        let limit = limits.callsPerRegistration
        try await run { database in
            try database.transaction { database in
                try database.execute("""
                    INSERT OR REPLACE INTO calls (registration_id, sid, chat, caller, media, at) VALUES (?, ?, ?, ?, ?, ?)
                    """, [.integer(call.registrationID), .text(call.sid), .text(call.chat), .text(call.caller),
                          .text(call.media.joined(separator: " ")), .integer(call.at)])
                try database.execute("""
                    DELETE FROM calls WHERE rowid IN (SELECT rowid FROM calls WHERE registration_id = ?
                        ORDER BY at DESC, rowid DESC LIMIT -1 OFFSET ?)
                    """, [.integer(call.registrationID), .integer(Int64(limit))])
            }
        }
    }

    public func takeCall(registrationID: Int64, sid: String, chat: String?) async throws -> PendingCall? {
        try await run { database in
            try database.transaction { database in
                guard let row = try database.query(
                    "SELECT * FROM calls WHERE registration_id = ? AND sid = ? AND (? IS NULL OR chat = ?)",
                    [.integer(registrationID), .text(sid), chat.map(SQLValue.text) ?? .null,
                     chat.map(SQLValue.text) ?? .null]).first else { return nil }
                try database.execute("DELETE FROM calls WHERE registration_id = ? AND sid = ?",
                                     [.integer(registrationID), .text(sid)])
                return PendingCall(registrationID: registrationID, sid: sid, chat: try row.decode("chat", \.stringValue),
                                   caller: try row.decode("caller", \.stringValue),
                                   media: try row.decode("media", \.stringValue).split(separator: " ").map(String.init),
                                   at: try row.decode("at", \.int64Value))
            }
        }
    }

    // MARK: Retries

    @discardableResult
    public func enqueueRetry(_ item: RetryItem) async throws -> Int64? {
        let limits = limits
        return try await run { database in
            try database.transaction { database in try Self.insert(item, limits: limits, in: database) }
        }
    }

    /// Inserts a retry, or returns nil when the registration's or the store's cap of retries is reached.
    /// Every insert goes through here, the outbox's included, so no path passes the caps.
    private static func insert(_ item: RetryItem, limits: StoreLimits, in database: Database) throws -> Int64? {
        let queued = try database.queryOne("SELECT count(*) AS n FROM retries WHERE registration_id = ?",
                                           [.integer(item.registrationID)]).decode("n", \.int64Value)
        guard queued < limits.retriesPerRegistration,
              try Self.size("retries", in: database) < limits.retries else { return nil }
        try database.execute("""
            INSERT INTO retries (registration_id, summary, kind, collapse_chat, attempts, next_at, deadline)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.integer(item.registrationID), .text(item.summary), .text(item.kind), optional(item.collapseChat),
                  .integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.deadline)])
        return database.lastInsertRowID
    }

    public func nextRetry() async throws -> Timestamp? {
        try await run { database in
            try database.queryOne("SELECT min(next_at) AS next FROM retries").decodeIfPresent("next", \.int64Value)
        }
    }

    public func updateRetry(_ item: RetryItem) async throws {
        try await run { database in
            try database.execute("UPDATE retries SET attempts = ?, next_at = ? WHERE id = ?",
                                 [.integer(Int64(item.attempts)), .integer(item.nextAt), .integer(item.id)])
        }
    }

    public func deleteRetry(id: Int64) async throws {
        try await run { database in
            try database.execute("DELETE FROM retries WHERE id = ?", [.integer(id)])
        }
    }

    // MARK: Counters

    /// A name not stored yet is added only while there are fewer than `limits.counters`.
    public func increment(_ counters: [String: Int64]) async throws {
        let limit = limits.counters
        try await run { database in
            try database.transaction { database in
                for (name, amount) in counters {
                    try database.execute("UPDATE counters SET value = value + ? WHERE name = ?",
                                         [.integer(amount), .text(name)])
                    guard database.changes == 0 else { continue }
                    try database.execute("""
                        INSERT INTO counters (name, value) SELECT ?1, ?2 WHERE (SELECT count(*) FROM counters) < ?3
                        """, [.text(name), .integer(amount), .integer(Int64(limit))])
                }
            }
        }
    }

    public func counters() async throws -> [String: Int64] {
        try await run { database in
            var result: [String: Int64] = [:]
            for row in try database.query("SELECT name, value FROM counters") {
                result[try row.decode("name", \.stringValue)] = try row.decode("value", \.int64Value)
            }
            return result
        }
    }

    // MARK: Unknown nodes

    public func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int) async throws -> Bool {
        try await run { database in
            try database.transaction { database in
                try database.execute("DELETE FROM unknown_node_answers WHERE at < ?", [.integer(since)])
                let recent = try database.queryOne("SELECT count(*) AS n FROM unknown_node_answers")
                    .decode("n", \.int64Value)
                guard recent < limit else { return false }
                try database.execute("INSERT INTO unknown_node_answers (at) VALUES (?)", [.integer(at)])
                return true
            }
        }
    }

    // MARK: Policies

    /// The defaults are stored under the empty account name.
    public func policy(account: String?) async throws -> String? {
        try await run { database in
            try database.query("SELECT document FROM policies WHERE account = ?", [.text(account ?? "")]).first?
                .decode("document", \.stringValue)
        }
    }

    public func setPolicy(account: String?, json: String?) async throws {
        try await run { database in
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
        try await run { database in
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
        guard let calls = CallsMode(rawValue: try row.decode("calls", \.stringValue)) else {
            throw row.unknownValue("calls")
        }
        return Registration(
            id: try row.decode("id", \.int64Value), domain: try row.decode("domain", \.stringValue),
            token: try row.decode("token", \.stringValue), pushModule: try row.decode("push_module", \.stringValue),
            account: try row.decodeIfPresent("account", \.stringValue),
            deviceKey: try row.decode("device_key", \.bytesValue), calls: calls,
            wantsReads: try row.decode("wants_reads", \.boolValue),
            collapseKey: try row.decode("collapse_key", \.bytesValue),
            createdAt: try row.decode("created_at", \.int64Value),
            lastPushAt: try row.decodeIfPresent("last_push_at", \.int64Value),
            lastError: try row.decodeIfPresent("last_error", \.stringValue),
            lastErrorAt: try row.decodeIfPresent("last_error_at", \.int64Value),
            lastWakeAt: try row.decodeIfPresent("last_wake_at", \.int64Value),
            pushCount: try row.decode("push_count", \.int64Value), errorCount: try row.decode("error_count", \.int64Value))
    }

    private static func retryItem(_ row: Row) throws -> RetryItem {
        RetryItem(id: try row.decode("id", \.int64Value), registrationID: try row.decode("registration_id", \.int64Value),
                  summary: try row.decode("summary", \.stringValue), kind: try row.decode("kind", \.stringValue),
                  collapseChat: try row.decodeIfPresent("collapse_chat", \.stringValue),
                  attempts: Int(try row.decode("attempts", \.int64Value)),
                  nextAt: try row.decode("next_at", \.int64Value), deadline: try row.decode("deadline", \.int64Value))
    }

    private static func chatState(_ row: Row) throws -> ChatState {
        let held = try row.decodeIfPresent("held", \.stringValue).map { json in
            do {
                return try JSONDecoder().decode(HeldNotice.self, from: Data(json.utf8))
            } catch {
                throw row.unknownValue("held")
            }
        }
        return ChatState(
            registrationID: try row.decode("registration_id", \.int64Value), chat: try row.decode("chat", \.stringValue),
            count: Int(try row.decode("count", \.int64Value)),
            lastMessageAt: try row.decodeIfPresent("last_message_at", \.int64Value),
            windowEndsAt: try row.decodeIfPresent("window_ends_at", \.int64Value),
            windowMilliseconds: try row.decode("window_ms", \.int64Value), held: held,
            noticedSinceRead: try row.decode("noticed_since_read", \.boolValue),
            lastReadPushAt: try row.decodeIfPresent("last_read_push_at", \.int64Value))
    }
}

// MARK: Outbox

extension SQLitePushStore {
    public func updateChatAndEnqueue<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @escaping @Sendable (inout ChatState?) -> (Result, RetryItem?)
    ) async throws -> (Result, RetryItem?) {
        let limits = limits
        return try await run { database in
            try database.transaction { database in
                var (result, item) = try Self.updateChat(registrationID: registrationID, chat: chat,
                                                         limit: limits.chatsPerRegistration, in: database, change)
                // Past the cap of retries the push is not kept: the caller learns it from a nil item.
                if let stored = item {
                    item = try Self.insert(stored, limits: limits, in: database).map { id in
                        var kept = stored
                        kept.id = id
                        return kept
                    }
                }
                return (result, item)
            }
        }
    }

    public func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64)
        async throws {
        try await run { database in
            try database.transaction { database in
                try Self.recordPush(registrationID: registrationID, at: at, error: error, in: database)
                try database.execute("DELETE FROM retries WHERE id = ?", [.integer(retryID)])
            }
        }
    }

    public func claimDueRetries(at now: Timestamp, limit: Int, leaseUntil: Timestamp) async throws -> [RetryItem] {
        try await run { database in
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
        try await run { database in
            try database.transaction { database in
                // A leased item is in flight until its lease ends: its answer may still come.
                let expired = "deadline < ?1 AND next_at <= ?1"
                var counts: [String: Int] = [:]
                for row in try database.query("SELECT kind, count(*) AS n FROM retries WHERE \(expired) GROUP BY kind",
                                              [.integer(now)]) {
                    counts[try row.decode("kind", \.stringValue), default: 0] += Int(try row.decode("n", \.int64Value))
                }
                if !counts.isEmpty {
                    try database.execute("DELETE FROM retries WHERE \(expired)", [.integer(now)])
                }
                return counts
            }
        }
    }
}
