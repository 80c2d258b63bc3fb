public import SQLCore

extension Database {
    /// Brings the schema up to the last of `migrations`, tracked in `PRAGMA user_version`. Each pending
    /// migration runs in its own transaction together with its version bump, so a failure leaves the
    /// database at the previous version. Refuses a database newer than the last migration.
    public func migrate(_ migrations: [Migration]) throws {
        let newestKnown = try Migration.newestVersion(of: migrations)
        let current = try userVersion
        guard current <= newestKnown else {
            throw MigrationError.databaseNewerThanCode(databaseVersion: current, newestKnown: newestKnown)
        }
        for migration in migrations where migration.version > current {
            // Outside the transaction: SQLite ignores this pragma inside one.
            if migration.rebuildsTables { try executeScript("PRAGMA foreign_keys = OFF") }
            let migrated = Result {
                try transaction { database in
                    // Another process may have migrated between the read above and this write lock.
                    guard try database.userVersion < migration.version else { return }
                    try database.executeScript(migration.sql)
                    if migration.rebuildsTables, let orphan = try database.query("PRAGMA foreign_key_check").first {
                        throw MigrationError.foreignKeyViolation(
                            version: migration.version,
                            table: try orphan.decode("table", \.stringValue))
                    }
                    try database.executeScript("PRAGMA user_version = \(migration.version)")
                }
            }
            if migration.rebuildsTables { try executeScript("PRAGMA foreign_keys = ON") }
            try migrated.get()
        }
    }
}
