import SQLiteTesting
import Testing

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
}
