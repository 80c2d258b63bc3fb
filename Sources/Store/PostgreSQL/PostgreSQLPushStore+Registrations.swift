import PostgreSQL
import Sealing
import SQLCore
import SQLite

/// Registrations on PostgreSQL, as `SQLitePushStore`'s (the choice of a registration, the caps, the
/// tombstones of a retirement); registration changes of one token are serialised by an advisory lock,
/// so two publishes of a new device never both insert it.
extension PostgreSQLPushStore {
    public func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration
    {
        let limits = limits
        return try await run { connection in
            try Self.transaction(connection) { connection in
                try Self.register(request, freshCollapseKey: freshCollapseKey, now: now, limits: limits, in: connection)
            }
        }
    }

    static func register(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
        limits: StoreLimits, in connection: Connection
    ) throws -> Registration {
        try connection.enqueue(tokenLock(request.token))
        let old = try connection.query(registrationLookup(for: request)).first.map(SQLitePushStore.registration)
        return try register(
            request, over: old, freshCollapseKey: freshCollapseKey, now: now, limits: limits, in: connection)
    }

    /// Serialises the registration changes of one token, until the transaction ends.
    static func tokenLock(_ token: String) -> SQLStatement {
        ("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(token)])
    }

    /// The registration `request` would update (`registration(domain:token:account:deviceKey:in:)`).
    static func registrationLookup(for request: RegistrationRequest) -> SQLStatement {
        registrationLookup(
            domain: request.domain, token: request.token, account: SQLitePushStore.account(of: request),
            deviceKey: request.deviceKey)
    }

    /// `register` once the token is locked and its registration (`old`, if any) read.
    static func register(
        _ request: RegistrationRequest, over old: Registration?, freshCollapseKey: [UInt8], now: Timestamp,
        limits: StoreLimits, in connection: Connection
    ) throws -> Registration {
        let account = SQLitePushStore.account(of: request)
        if let old {
            guard var updated = old.updated(by: request, account: account, freshCollapseKey: freshCollapseKey)
            else {
                guard old.isDueForRenewal(at: now) else { return old }
                try connection.enqueue(
                    "UPDATE registrations SET last_used_at = greatest(last_used_at, $1) WHERE id = $2",
                    [.integer(now), .integer(old.id)])
                return old.renewed(at: now)
            }
            if old.account == nil, let account {
                try makeRoom(forAccount: account, limits: limits, in: connection)
            }
            updated.lastUsedAt = now
            try connection.enqueue(
                """
                UPDATE registrations SET push_module = $1, account = $2, device_key = $3, calls = $4,
                    wants_reads = $5, collapse_key = $6, updated_at = $7, last_used_at = greatest(last_used_at, $7)
                WHERE id = $8
                """,
                [
                    .text(updated.pushModule), SQLitePushStore.optional(updated.account), .blob(updated.deviceKey),
                    .text(updated.calls.rawValue), SQLValue(updated.wantsReads), .blob(updated.collapseKey),
                    .integer(now), .integer(old.id),
                ])
            return updated
        }
        if let account {
            try makeRoom(forAccount: account, limits: limits, in: connection)
        }
        guard try lockedSize("registrations", in: connection) < limits.registrations else {
            throw StoreCapacityError(collection: "registrations", limit: limits.registrations)
        }
        if account == nil,
            try lockedSize(SQLitePushStore.withoutAccount, in: connection) >= limits.registrationsWithoutAccount
        {
            throw StoreCapacityError(
                collection: "registrations without an account", limit: limits.registrationsWithoutAccount)
        }
        let id = try connection.queryOne(
            """
            INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                collapse_key, created_at, updated_at, last_used_at, fingerprint)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9, $10) RETURNING id
            """,
            [
                .text(request.domain), .text(request.token), .text(request.pushModule),
                SQLitePushStore.optional(account), .blob(request.deviceKey), .text(request.calls.rawValue),
                SQLValue(request.wantsReads), .blob(freshCollapseKey), .integer(now),
                .text(Fingerprint.of(request.token)),
            ]
        ).decode("id", \.int64Value)
        return Registration(
            id: id, domain: request.domain, token: request.token, pushModule: request.pushModule,
            account: account, deviceKey: request.deviceKey, calls: request.calls,
            wantsReads: request.wantsReads, collapseKey: freshCollapseKey, createdAt: now)
    }

    /// Makes room for one more registration of `account` by removing its least recently used ones.
    private static func makeRoom(forAccount account: String, limits: StoreLimits, in connection: Connection) throws {
        let held = try connection.queryOne(
            "SELECT count(*) AS n FROM registrations WHERE account = $1", [.text(account)]
        ).decode("n", \.int64Value)
        let excess = held - Int64(limits.registrationsPerAccount) + 1
        guard excess > 0 else { return }
        try connection.execute(
            """
            DELETE FROM registrations WHERE id IN (SELECT id FROM registrations WHERE account = $1
                ORDER BY last_used_at, id LIMIT $2)
            """, [.text(account), .integer(excess)])
    }

    /// `SQLitePushStore.registration(domain:token:account:deviceKey:in:)`'s choice, in one ORDER BY.
    static func registrationLookup(domain: String, token: String, account: String?, deviceKey: [UInt8]?)
        -> SQLStatement
    {
        (
            """
            SELECT * FROM registrations
            WHERE md5(token) = md5($1) AND token = $1 AND domain = $2 AND ($3::text IS NULL OR account = $3 OR account IS NULL)
            ORDER BY account IS NOT DISTINCT FROM $3 DESC, account IS NULL DESC,
                device_key IS NOT DISTINCT FROM $4::bytea DESC, updated_at DESC, id DESC
            LIMIT 1
            """,
            [.text(token), .text(domain), SQLitePushStore.optional(account), deviceKey.map(SQLValue.blob) ?? .null]
        )
    }

    public func registration(id: Int64) async throws -> Registration? {
        try await run { connection in
            try connection.query("SELECT * FROM registrations WHERE id = $1", [.integer(id)]).first
                .map(SQLitePushStore.registration)
        }
    }

    /// Every statement is planned with its parameters (libpq's unnamed statements), so a condition
    /// whose parameter is null folds away and an index serves the others.
    private static let filterClause = """
        WHERE ($1::text IS NULL OR account = $1) AND ($2::text IS NULL OR domain = $2)
            AND ($3::text IS NULL OR push_module = $3) AND ($4::text IS NULL OR fingerprint = $4)
        """

    private static func filterParameters(_ filter: RegistrationFilter) -> [SQLValue] {
        [filter.account, filter.domain, filter.pushModule, filter.fingerprint].map(SQLitePushStore.optional)
    }

    public func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws
        -> [Registration]
    {
        try await run { connection in
            try connection.query(
                "SELECT * FROM registrations \(Self.filterClause) ORDER BY id LIMIT $5 OFFSET $6",
                Self.filterParameters(filter) + [.integer(Int64(limit)), .integer(Int64(offset))]
            ).map(SQLitePushStore.registration)
        }
    }

    public func countRegistrations(matching filter: RegistrationFilter) async throws -> Int {
        try await run { connection in
            // All of them: the kept total, not a count of a million rows.
            if filter == RegistrationFilter() {
                return Int(
                    try connection.queryOne("SELECT count FROM sizes WHERE name = 'registrations'")
                        .decode("count", \.int64Value))
            }
            return Int(
                try connection.queryOne(
                    "SELECT count(*) AS n FROM registrations \(Self.filterClause)", Self.filterParameters(filter)
                ).decode("n", \.int64Value))
        }
    }

    public func countRegistrationsWithoutAccount() async throws -> Int {
        try await run { connection in
            Int(
                try connection.queryOne(
                    "SELECT count FROM sizes WHERE name = $1", [.text(SQLitePushStore.withoutAccount)]
                )
                .decode("count", \.int64Value))
        }
    }

    public func expireRegistrations(unusedBefore: Timestamp, limit: Int) async throws -> Int {
        try await run { connection in
            try connection.execute(
                """
                DELETE FROM registrations WHERE id IN
                    (SELECT id FROM registrations WHERE last_used_at < $1 ORDER BY last_used_at LIMIT $2)
                """, [.integer(unusedBefore), .integer(Int64(limit))])
        }
    }

    public func registrationsByDomain() async throws -> [String: Int] {
        try await run { connection in
            var counts: [String: Int] = [:]
            for row in try connection.query(
                "SELECT substr(name, 15) AS domain, count FROM sizes WHERE substr(name, 1, 14) = 'registrations@'")
            {
                counts[try row.decode("domain", \.stringValue)] = Int(try row.decode("count", \.int64Value))
            }
            return counts
        }
    }

    public func accountsWithRegistrations(domain: String, after: String?, limit: Int) async throws -> [String] {
        try await run { connection in
            try connection.query(
                """
                SELECT DISTINCT account FROM registrations WHERE domain = $1 AND account > $2 ORDER BY account LIMIT $3
                """, [.text(domain), .text(after ?? ""), .integer(Int64(limit))]
            ).map { try $0.decode("account", \.stringValue) }
        }
    }

    public func removeRegistrations(domain: String, account: String, token: String?) async throws -> [Registration] {
        try await run { connection in
            try Self.transaction(connection) { connection in
                try connection.query(
                    """
                    DELETE FROM registrations WHERE domain = $1 AND account = $2 AND ($3::text IS NULL OR token = $3)
                    RETURNING *
                    """, [.text(domain), .text(account), SQLitePushStore.optional(token)]
                ).map(SQLitePushStore.registration).sorted { $0.id < $1.id }
            }
        }
    }

    @discardableResult
    public func retire(registrationID: Int64, at: Timestamp) async throws -> Registration? {
        try await run { connection in
            try Self.transaction(connection) { connection in
                guard
                    let registration = try connection.query(
                        "DELETE FROM registrations WHERE id = $1 RETURNING *", [.integer(registrationID)]
                    ).first.map(SQLitePushStore.registration)
                else { return nil }
                try Self.bury(
                    token: registration.token, pushModule: registration.pushModule,
                    scope: registration.account ?? SQLitePushStore.accountlessScope, at: at, in: connection)
                return registration
            }
        }
    }

    @discardableResult
    public func buryDeadToken(_ token: String, pushModule: String, at: Timestamp) async throws -> Int {
        try await run { connection in
            try Self.transaction(connection) { connection in
                let removed = try connection.execute(
                    "DELETE FROM registrations WHERE md5(token) = md5($1) AND token = $1 AND push_module = $2",
                    [.text(token), .text(pushModule)])
                try Self.bury(
                    token: token, pushModule: pushModule, scope: SQLitePushStore.everyAccountScope, at: at,
                    in: connection)
                return removed
            }
        }
    }

    static func bury(token: String, pushModule: String, scope: String, at: Timestamp, in connection: Connection)
        throws
    {
        try connection.enqueue(
            """
            INSERT INTO tombstones (token, push_module, scope, buried_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (md5(token), push_module, md5(scope)) DO UPDATE SET buried_at = EXCLUDED.buried_at
            """, [.text(token), .text(pushModule), .text(scope), .integer(at)])
    }

    public func exhume(token: String, pushModule: String, account: String) async throws {
        try await run { connection in
            try connection.execute(
                "DELETE FROM tombstones WHERE md5(token) = md5($1) AND token = $1 AND push_module = $2 AND scope IN ($3, $4)",
                [.text(token), .text(pushModule), .text(SQLitePushStore.everyAccountScope), .text(account)])
        }
    }
}

extension PostgreSQLPushTransaction {
    /// The tombstone, the token's lock, its registration and the policy generation (which the publish
    /// reads next) in one round trip.
    func registerUnlessBuried(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp, buriedSince: Timestamp
    ) throws -> Registration? {
        try connection.enqueue(PostgreSQLPushStore.tokenLock(request.token))
        let rows = try readingPolicyGeneration(
            PostgreSQLPushStore.registrationLookup(for: request),
            tombstoneLookup(
                token: request.token, pushModule: request.pushModule, account: SQLitePushStore.account(of: request),
                since: buriedSince))
        guard rows[1].isEmpty else { return nil }
        return try PostgreSQLPushStore.register(
            request, over: rows[0].first.map(SQLitePushStore.registration), freshCollapseKey: freshCollapseKey,
            now: now, limits: limits, in: connection)
    }

    /// The registration and the policy generation (which the publish reads next) in one round trip.
    func registration(domain: String, token: String, account: String?) throws -> Registration? {
        try readingPolicyGeneration(
            PostgreSQLPushStore.registrationLookup(domain: domain, token: token, account: account, deviceKey: nil)
        )[0].first.map(SQLitePushStore.registration)
    }

    /// Runs `statements` with the read of the policy generation, kept for `policyGeneration`; returns
    /// their rows.
    private func readingPolicyGeneration(_ statements: SQLStatement...) throws -> [[Row]] {
        let rows = try connection.queries(statements + [(Self.policyGenerationQuery, [])])
        readAhead.policyGeneration = try rows.last?.first?.decode("value", \.int64Value)
        return Array(rows.dropLast())
    }

    func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64?) throws {
        if let error {
            try connection.enqueue(
                """
                UPDATE registrations SET error_count = error_count + 1,
                    last_error = CASE WHEN last_error_at > $2 THEN last_error ELSE $1 END,
                    last_error_at = greatest(last_error_at, $2)
                WHERE id = $3
                """, [.text(error), .integer(at), .integer(registrationID)])
        } else {
            try connection.enqueue(
                """
                UPDATE registrations SET last_push_at = greatest(last_push_at, $1),
                    last_used_at = greatest(last_used_at, $1), push_count = push_count + 1 WHERE id = $2
                """,
                [.integer(at), .integer(registrationID)])
        }
        if let retryID {
            try connection.enqueue("DELETE FROM retries WHERE id = $1", [.integer(retryID)])
        }
    }

    func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) throws -> Bool {
        try connection.execute(
            """
            UPDATE registrations SET last_wake_at = $1
            WHERE id = $2 AND (last_wake_at IS NULL OR last_wake_at <= $3)
            """, [.integer(at), .integer(registrationID), .integer(since)]) > 0
    }

    func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp) throws -> Bool {
        !(try connection.query(tombstoneLookup(token: token, pushModule: pushModule, account: account, since: since))
            .isEmpty)
    }

    private func tombstoneLookup(token: String, pushModule: String?, account: String?, since: Timestamp)
        -> SQLStatement
    {
        (
            """
            SELECT 1 FROM tombstones WHERE md5(token) = md5($1) AND token = $1 AND ($2::text IS NULL OR push_module = $2)
                AND scope IN ($3, $4) AND buried_at >= $5 LIMIT 1
            """,
            [
                .text(token), SQLitePushStore.optional(pushModule), .text(SQLitePushStore.everyAccountScope),
                .text(account ?? SQLitePushStore.accountlessScope), .integer(since),
            ]
        )
    }
}
