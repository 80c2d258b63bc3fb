public import SQLCore

extension Connection {
    /// Brings the schema up to the last of `migrations` (SQLite's `Migration`: a version and its SQL;
    /// `rebuildsTables` means nothing here, PostgreSQL changes a table in place), tracked in the table
    /// `schema_version`. Each pending migration runs in its own transaction with its version bump, so a
    /// failure leaves the database at the previous version; an advisory lock keeps two instances that
    /// start together from running one twice. Refuses a database newer than the last migration.
    public func migrate(_ migrations: [Migration]) throws {
        let newestKnown = try Migration.newestVersion(of: migrations)
        try transaction(isolation: "READ COMMITTED") { connection in
            try connection.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
            try connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
        }
        let current = try schemaVersion
        guard current <= newestKnown else {
            throw MigrationError.databaseNewerThanCode(databaseVersion: current, newestKnown: newestKnown)
        }
        for migration in migrations where migration.version > current {
            try transaction(isolation: "READ COMMITTED") { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
                // Another instance may have migrated since the read above.
                guard try connection.schemaVersion < migration.version else { return }
                try connection.executeScript(migration.sql)
                try connection.execute("DELETE FROM schema_version")
                try connection.execute(
                    "INSERT INTO schema_version (version) VALUES ($1)", [.integer(Int64(migration.version))])
            }
        }
    }

    /// The version `migrate` recorded; 0 for a database it never touched.
    public var schemaVersion: Int {
        get throws {
            let table = try queryOne("SELECT to_regclass('schema_version') IS NOT NULL AS exists")
            guard try table.decode("exists", \.boolValue) else { return 0 }
            let row = try queryOne(
                "SELECT coalesce((SELECT max(version) FROM schema_version), 0)::bigint AS version")
            return Int(try row.decode("version", \.int64Value))
        }
    }

    /// The advisory lock that migrations of any schema on this database take ("apushmig").
    static let migrationLock: Int64 = 0x6170_7573_686D_6967
}
