import SQLCore
import SQLite
import Sealing

/// Registrations: create or update one per (domain, account, token), find, list, remove and retire
/// them, and record each push's outcome and each wake.
extension SQLitePushStore {
    public func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration
    {
        let limits = limits
        return try await run { database in
            try database.transaction { database in
                try Self.register(request, freshCollapseKey: freshCollapseKey, now: now, limits: limits, in: database)
            }
        }
    }

    /// The request's account; an empty name is none.
    static func account(of request: RegistrationRequest) -> String? {
        request.account.flatMap { $0.isEmpty ? nil : $0 }
    }

    static func register(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
        limits: StoreLimits, in database: Database
    ) throws -> Registration {
        let account = Self.account(of: request)
        if let old = try registration(
            domain: request.domain, token: request.token, account: account,
            deviceKey: request.deviceKey, in: database)
        {
            guard var updated = old.updated(by: request, account: account, freshCollapseKey: freshCollapseKey)
            else {
                guard old.isDueForRenewal(at: now) else { return old }
                try database.execute(
                    "UPDATE registrations SET last_used_at = ? WHERE id = ?", [.integer(now), .integer(old.id)])
                return old.renewed(at: now)
            }
            if old.account == nil, let account {
                try makeRoom(forAccount: account, limits: limits, in: database)
            }
            updated.lastUsedAt = now
            try database.execute(
                """
                UPDATE registrations SET push_module = ?, account = ?, device_key = ?, calls = ?,
                    wants_reads = ?, collapse_key = ?, updated_at = ?7, last_used_at = ?7 WHERE id = ?8
                """,
                [
                    .text(updated.pushModule), Self.optional(updated.account), .blob(updated.deviceKey),
                    .text(updated.calls.rawValue), SQLValue(updated.wantsReads), .blob(updated.collapseKey),
                    .integer(now), .integer(old.id),
                ])
            return updated
        }
        if let account {
            try makeRoom(forAccount: account, limits: limits, in: database)
        }
        guard try size("registrations", in: database) < limits.registrations else {
            throw StoreCapacityError(collection: "registrations", limit: limits.registrations)
        }
        if account == nil, try size(withoutAccount, in: database) >= limits.registrationsWithoutAccount {
            throw StoreCapacityError(
                collection: "registrations without an account", limit: limits.registrationsWithoutAccount)
        }
        try database.execute(
            """
            INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                collapse_key, created_at, updated_at, last_used_at, fingerprint)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?9, ?9, ?9, ?)
            """,
            [
                .text(request.domain), .text(request.token), .text(request.pushModule),
                Self.optional(account), .blob(request.deviceKey), .text(request.calls.rawValue),
                SQLValue(request.wantsReads), .blob(freshCollapseKey), .integer(now),
                .text(Fingerprint.of(request.token)),
            ])
        return Registration(
            id: database.lastInsertRowID, domain: request.domain, token: request.token,
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
        try database.execute(
            """
            DELETE FROM registrations WHERE id IN (SELECT id FROM registrations WHERE account = ?
                ORDER BY last_used_at, id LIMIT ?)
            """, [.text(account), .integer(excess)])
    }

    /// The choice documented on `PushTransaction.registration(domain:token:account:)`, in one ORDER BY. A
    /// stock publish's options carry a device key: among several accounts, the one with that key is the
    /// one it speaks for.
    static func registration(
        domain: String, token: String, account: String?, deviceKey: [UInt8]?,
        in database: Database
    ) throws -> Registration? {
        try database.query(
            """
            SELECT * FROM registrations WHERE token = ?1 AND domain = ?2 AND (?3 IS NULL OR account = ?3 OR account IS NULL)
            ORDER BY account IS ?3 DESC, account IS NULL DESC, device_key IS ?4 DESC, updated_at DESC, id DESC LIMIT 1
            """, [.text(token), .text(domain), Self.optional(account), deviceKey.map(SQLValue.blob) ?? .null]
        )
        .first.map(registration)
    }

    public func registration(id: Int64) async throws -> Registration? {
        try await run { database in
            try database.query("SELECT * FROM registrations WHERE id = ?", [.integer(id)]).first.map(Self.registration)
        }
    }

    public func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws
        -> [Registration]
    {
        try await run { database in
            let query = Self.listing(filter, limit: limit, offset: offset)
            return try database.query(query.sql, query.bindings).map(Self.registration)
        }
    }

    public func countRegistrations(matching filter: RegistrationFilter) async throws -> Int {
        try await run { database in
            // All of them: the kept total, not a count of a million rows.
            if filter == RegistrationFilter() { return try Self.size("registrations", in: database) }
            let query = Self.counting(filter)
            return Int(try database.queryOne(query.sql, query.bindings).decode("n", \.int64Value))
        }
    }

    /// The name of the kept total of registrations with no account.
    static let withoutAccount = "registrations-without-account"

    public func countRegistrationsWithoutAccount() async throws -> Int {
        try await run { database in try Self.size(Self.withoutAccount, in: database) }
    }

    public func expireRegistrations(unusedBefore: Timestamp, limit: Int) async throws -> Int {
        try await run { database in
            try database.execute(
                """
                DELETE FROM registrations WHERE id IN
                    (SELECT id FROM registrations WHERE last_used_at < ? ORDER BY last_used_at LIMIT ?)
                """, [.integer(unusedBefore), .integer(Int64(limit))])
            return database.changes
        }
    }

    public func registrationsByDomain() async throws -> [String: Int] {
        try await run { database in
            let rows = try database.query(
                "SELECT substr(name, 15) AS domain, count FROM sizes WHERE substr(name, 1, 14) = 'registrations@'")
            var counts: [String: Int] = [:]
            for row in rows {
                counts[try row.decode("domain", \.stringValue)] = Int(try row.decode("count", \.int64Value))
            }
            return counts
        }
    }

    /// A page of the registrations `filter` selects, in id order: only that page is read into memory.
    static func listing(_ filter: RegistrationFilter, limit: Int, offset: Int) -> (sql: String, bindings: [SQLValue]) {
        let (clause, bindings) = whereClause(filter)
        return (
            "SELECT * FROM registrations \(clause) ORDER BY id LIMIT ? OFFSET ?",
            bindings + [.integer(Int64(limit)), .integer(Int64(offset))]
        )
    }

    /// How many registrations `filter` selects.
    static func counting(_ filter: RegistrationFilter) -> (sql: String, bindings: [SQLValue]) {
        let (clause, bindings) = whereClause(filter)
        return ("SELECT count(*) AS n FROM registrations \(clause)", bindings)
    }

    /// The filter's conditions, only those it sets, so an index serves each (`?1 IS NULL OR account = ?1`
    /// would make SQLite scan the table). One of 16 SQL strings, each prepared once and cached.
    private static func whereClause(_ filter: RegistrationFilter) -> (String, [SQLValue]) {
        let conditions = [
            ("account", filter.account), ("domain", filter.domain), ("push_module", filter.pushModule),
            ("fingerprint", filter.fingerprint),
        ]
        .compactMap { column, value in value.map { (column, SQLValue.text($0)) } }
        guard !conditions.isEmpty else { return ("", []) }
        return ("WHERE " + conditions.map { "\($0.0) = ?" }.joined(separator: " AND "), conditions.map(\.1))
    }

    public func accountsWithRegistrations(domain: String, after: String?, limit: Int) async throws -> [String] {
        try await run { database in
            try database.query(
                """
                SELECT DISTINCT account FROM registrations WHERE domain = ? AND account > ? ORDER BY account LIMIT ?
                """, [.text(domain), .text(after ?? ""), .integer(Int64(limit))]
            ).map { try $0.decode("account", \.stringValue) }
        }
    }

    public func removeRegistrations(domain: String, account: String, token: String?) async throws -> [Registration] {
        try await run { database in
            try database.transaction { database in
                let rows = try database.query(
                    """
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
                guard
                    let row = try database.query(
                        "SELECT * FROM registrations WHERE id = ?",
                        [.integer(registrationID)]
                    ).first
                else { return nil }
                let registration = try Self.registration(row)
                try database.execute("DELETE FROM registrations WHERE id = ?", [.integer(registrationID)])
                try Self.bury(
                    token: registration.token, pushModule: registration.pushModule,
                    scope: registration.account ?? Self.accountlessScope, at: at, in: database)
                return registration
            }
        }
    }

    @discardableResult
    public func buryDeadToken(_ token: String, pushModule: String, at: Timestamp) async throws -> Int {
        try await run { database in
            try database.transaction { database in
                try database.execute(
                    "DELETE FROM registrations WHERE token = ? AND push_module = ?",
                    [.text(token), .text(pushModule)])
                let removed = database.changes
                try Self.bury(token: token, pushModule: pushModule, scope: Self.everyAccountScope, at: at, in: database)
                return removed
            }
        }
    }

    static func recordPush(registrationID: Int64, at: Timestamp, error: String?, in database: Database) throws {
        if let error {
            try database.execute(
                """
                UPDATE registrations SET last_error = ?, last_error_at = ?, error_count = error_count + 1
                WHERE id = ?
                """, [.text(error), .integer(at), .integer(registrationID)])
        } else {
            try database.execute(
                """
                UPDATE registrations SET last_push_at = ?1, last_used_at = max(last_used_at, ?1),
                    push_count = push_count + 1 WHERE id = ?2
                """, [.integer(at), .integer(registrationID)])
        }
    }

    static func registration(_ row: Row) throws -> Registration {
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
            pushCount: try row.decode("push_count", \.int64Value),
            errorCount: try row.decode("error_count", \.int64Value),
            lastUsedAt: try row.decode("last_used_at", \.int64Value))
    }
}

extension Registration {
    /// Registered again unchanged, a day or more since its last use was written: written again.
    func isDueForRenewal(at now: Timestamp) -> Bool {
        now - lastUsedAt >= StoreLimits.renewalResolution
    }

    func renewed(at now: Timestamp) -> Registration {
        var renewed = self
        renewed.lastUsedAt = now
        return renewed
    }

    /// The registration as `request` (from `account`, nil for none) leaves it, nil when it changes
    /// nothing (the server echoes the same options on every publish: most calls change nothing). A
    /// changed device key gets `freshCollapseKey`; a request with no account keeps the registration's.
    func updated(by request: RegistrationRequest, account: String?, freshCollapseKey: [UInt8]) -> Registration? {
        if pushModule == request.pushModule, deviceKey == request.deviceKey, calls == request.calls,
            wantsReads == request.wantsReads, account == nil || account == self.account
        {
            return nil
        }
        var updated = self
        updated.pushModule = request.pushModule
        updated.account = account ?? self.account
        updated.deviceKey = request.deviceKey
        updated.calls = request.calls
        updated.wantsReads = request.wantsReads
        updated.collapseKey = deviceKey == request.deviceKey ? collapseKey : freshCollapseKey
        return updated
    }
}

extension SQLitePushTransaction {
    func registerUnlessBuried(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
        buriedSince: Timestamp
    ) throws -> Registration? {
        guard
            !(try isBuried(
                token: request.token, pushModule: request.pushModule,
                account: SQLitePushStore.account(of: request), since: buriedSince))
        else {
            return nil
        }
        return try SQLitePushStore.register(
            request, freshCollapseKey: freshCollapseKey, now: now, limits: limits, in: database)
    }

    func registration(domain: String, token: String, account: String?) throws -> Registration? {
        try SQLitePushStore.registration(domain: domain, token: token, account: account, deviceKey: nil, in: database)
    }

    func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64?) throws {
        try SQLitePushStore.recordPush(registrationID: registrationID, at: at, error: error, in: database)
        if let retryID {
            try database.execute("DELETE FROM retries WHERE id = ?", [.integer(retryID)])
        }
    }

    func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) throws -> Bool {
        try database.execute(
            """
            UPDATE registrations SET last_wake_at = ?
            WHERE id = ? AND (last_wake_at IS NULL OR last_wake_at <= ?)
            """, [.integer(at), .integer(registrationID), .integer(since)])
        return database.changes > 0
    }
}
