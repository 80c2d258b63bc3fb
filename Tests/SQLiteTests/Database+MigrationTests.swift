import SQLiteTesting
import Testing

import SQLCore

@testable import SQLite

@Suite struct MigrationTests {
    static let migrations = [
        Migration(version: 1, sql: "CREATE TABLE log(step INTEGER); INSERT INTO log VALUES (1);"),
        Migration(version: 2, sql: "INSERT INTO log VALUES (2)"),
        Migration(version: 3, sql: "ALTER TABLE log ADD COLUMN note TEXT; INSERT INTO log VALUES (3, 'x');"),
    ]

    private func steps(_ database: Database) throws -> [Int64?] {
        try database.query("SELECT step FROM log ORDER BY rowid").map { try $0.decodeIfPresent("step", \.int64Value) }
    }

    @Test func runsEachMigrationInOrderAndBumpsTheVersion() throws {
        let database = try Database(.memory)
        #expect(try database.userVersion == 0)
        try database.migrate(Self.migrations)
        #expect(try steps(database) == [1, 2, 3])
        #expect(try database.userVersion == 3)
    }

    @Test func runsOnlyOnce() throws {
        let database = try Database(.memory)
        try database.migrate(Self.migrations)
        try database.migrate(Self.migrations)
        #expect(try steps(database) == [1, 2, 3])
    }

    @Test func appliesOnlyNewMigrations() throws {
        let database = try Database(.memory)
        try database.migrate(Array(Self.migrations.prefix(1)))
        #expect(try database.userVersion == 1)
        try database.migrate(Self.migrations)
        #expect(try steps(database) == [1, 2, 3])
    }

    @Test func isIdempotentOnReopen() throws {
        try withTemporaryDatabasePath { path in
            try Database(.file(path: path)).migrate(Self.migrations)
            let reopened = try Database(.file(path: path))
            try reopened.migrate(Self.migrations)
            #expect(try steps(reopened) == [1, 2, 3])
            #expect(try reopened.userVersion == 3)
        }
    }

    @Test func refusesADatabaseNewerThanTheCode() throws {
        let database = try Database(.memory)
        try database.migrate(Self.migrations)
        let error = #expect(throws: MigrationError.databaseNewerThanCode(databaseVersion: 3, newestKnown: 2)) {
            try database.migrate(Array(Self.migrations.prefix(2)))
        }
        #expect(error?.description.contains("newer") == true)
        #expect(try database.userVersion == 3)
    }

    @Test func refusesAnyVersionWithoutMigrations() throws {
        let database = try Database(.memory)
        try database.executeScript("PRAGMA user_version = 1")
        #expect(throws: MigrationError.databaseNewerThanCode(databaseVersion: 1, newestKnown: 0)) {
            try database.migrate([])
        }
    }

    @Test func failedMigrationLeavesThePreviousVersionWhole() throws {
        let database = try Database(.memory)
        let broken = Migration(version: 2, sql: "CREATE TABLE half(x); SELEC 1;")
        #expect(throws: SQLiteError.self) {
            try database.migrate([Self.migrations[0], broken])
        }
        #expect(try database.userVersion == 1)
        #expect(try steps(database) == [1])
        #expect(try database.query("SELECT name FROM sqlite_schema WHERE name = 'half'").isEmpty)
    }

    @Test(arguments: [[2, 1], [1, 1], [0, 1], [-1]])
    func refusesVersionsThatAreNotPositiveAndAscending(versions: [Int]) throws {
        let database = try Database(.memory)
        #expect(throws: MigrationError.invalidVersions(versions)) {
            try database.migrate(versions.map { Migration(version: $0, sql: "SELECT 1") })
        }
        #expect(try database.userVersion == 0)
    }

    @Test func aRebuildThatWouldOrphanARowIsRolledBack() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(.file(path: path))
            try database.migrate([
                Migration(
                    version: 1,
                    sql: """
                        CREATE TABLE parents (id INTEGER PRIMARY KEY);
                        CREATE TABLE children (parent INTEGER REFERENCES parents (id) ON DELETE CASCADE);
                        INSERT INTO parents VALUES (1), (2);
                        INSERT INTO children VALUES (1), (2);
                        """)
            ])
            let dropsAParent = Migration(
                version: 2, rebuildsTables: true,
                sql: """
                    CREATE TABLE parents_v2 (id INTEGER PRIMARY KEY);
                    INSERT INTO parents_v2 SELECT id FROM parents WHERE id = 1;
                    DROP TABLE parents;
                    ALTER TABLE parents_v2 RENAME TO parents;
                    """)
            #expect(throws: MigrationError.foreignKeyViolation(version: 2, table: "children")) {
                try database.migrate([Migration(version: 1, sql: ""), dropsAParent])
            }
            #expect(try database.userVersion == 1)
            #expect(try database.queryOne("SELECT count(*) AS n FROM children").decode("n", \.int64Value) == 2)
            // Foreign keys are back on after the failed rebuild.
            try database.execute("DELETE FROM parents WHERE id = 2")
            #expect(try database.queryOne("SELECT count(*) AS n FROM children").decode("n", \.int64Value) == 1)
        }
    }
}
