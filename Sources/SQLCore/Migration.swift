/// One step of the schema: `sql` (any number of statements) brings the database to `version`.
public struct Migration: Sendable, Hashable {
    public let version: Int
    public let sql: String
    /// The migration rebuilds a table that others reference (SQLite's 12-step rebuild: create the new
    /// table, copy, drop the old, rename). Foreign keys are off while it runs, so dropping the old table
    /// does not cascade to its children, and they are checked before it commits.
    public let rebuildsTables: Bool

    public init(version: Int, rebuildsTables: Bool = false, sql: String) {
        self.version = version
        self.rebuildsTables = rebuildsTables
        self.sql = sql
    }
}

extension Migration {
    /// The version the last of `migrations` brings a database to (0 for none), once every version is
    /// checked to be positive and the list strictly ascending.
    public static func newestVersion(of migrations: [Migration]) throws(MigrationError) -> Int {
        let versions = migrations.map(\.version)
        guard versions.allSatisfy({ $0 > 0 }), zip(versions, versions.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw MigrationError.invalidVersions(versions)
        }
        return versions.last ?? 0
    }
}

public enum MigrationError: Error, Equatable, CustomStringConvertible {
    /// The database was migrated by a newer release; running older code on it could corrupt it.
    case databaseNewerThanCode(databaseVersion: Int, newestKnown: Int)
    /// Versions must be positive and strictly ascending.
    case invalidVersions([Int])
    /// A table rebuild left a row whose parent is missing; the migration was rolled back.
    case foreignKeyViolation(version: Int, table: String)

    public var description: String {
        switch self {
        case .databaseNewerThanCode(let databaseVersion, let newestKnown):
            "database schema version \(databaseVersion) is newer than this build knows (\(newestKnown)); "
                + "run a newer release or restore a backup"
        case .invalidVersions(let versions):
            "migration versions must be positive and strictly ascending: \(versions)"
        case .foreignKeyViolation(let version, let table):
            "migration \(version) left a row of \(table) without its parent; rolled back"
        }
    }
}
