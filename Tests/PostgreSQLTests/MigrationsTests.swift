import SQLCore
import Testing

@testable import PostgreSQL

/// Versioned migrations on a real PostgreSQL 15.
@Suite struct MigrationsTests {
    @Test func migrationsRunOnceEachInOrderAndRefuseANewerDatabase() async throws {
        try await withConnection { connection in
            let migrations = [
                Migration(version: 1, sql: "CREATE TABLE one (value bigint); INSERT INTO one VALUES (1)"),
                Migration(version: 2, sql: "ALTER TABLE one ADD COLUMN name text"),
            ]
            #expect(try connection.schemaVersion == 0)
            try connection.migrate(Array(migrations.prefix(1)))
            #expect(try connection.schemaVersion == 1)
            try connection.migrate(migrations)
            try connection.migrate(migrations)
            #expect(try connection.schemaVersion == 2)
            #expect(try connection.query("SELECT value, name FROM one").count == 1)
            #expect(throws: MigrationError.databaseNewerThanCode(databaseVersion: 2, newestKnown: 1)) {
                try connection.migrate(Array(migrations.prefix(1)))
            }
        }
    }

    @Test func aFailedMigrationLeavesThePreviousVersion() async throws {
        try await withConnection { connection in
            try connection.migrate([Migration(version: 1, sql: "CREATE TABLE one (value bigint)")])
            #expect(throws: PostgreSQLError.self) {
                try connection.migrate([
                    Migration(version: 1, sql: "CREATE TABLE one (value bigint)"),
                    Migration(version: 2, sql: "CREATE TABLE two (value bigint); SELECT no_such_function()"),
                ])
            }
            #expect(try connection.schemaVersion == 1)
            #expect(try connection.query("SELECT to_regclass('two')::text AS two").first?[0] == .null)
        }
    }
}
