import Foundation
import SQLiteTesting
import Testing

import SQLCore

@testable import SQLite

@Suite struct DatabaseTests {
    private struct Abort: Error, Equatable {}

    private func makeTable(_ database: Database) throws {
        try database.execute("CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
    }

    private func names(_ database: Database) throws -> [String?] {
        try database.query("SELECT name FROM items ORDER BY id").map { try $0.decodeIfPresent("name", \.stringValue) }
    }

    @Test func memoryDatabaseStoresAndQueries() throws {
        let database = try Database(.memory)
        try makeTable(database)
        try database.execute("INSERT INTO items(name) VALUES (?), (?)", ["a", "b"])
        #expect(try names(database) == ["a", "b"])
    }

    @Test func aDefinedFunctionIsCalledFromSQLIncludingAMigration() throws {
        let database = try Database(.memory)
        try database.defineFunction("shout") { $0.stringValue.map { .text($0.uppercased()) } ?? .null }
        try database.migrate([
            Migration(version: 1, sql: "CREATE TABLE items(name TEXT); INSERT INTO items VALUES ('a'), (NULL)"),
            Migration(version: 2, sql: "ALTER TABLE items ADD COLUMN loud TEXT; UPDATE items SET loud = shout(name)"),
        ])
        #expect(
            try database.query("SELECT loud FROM items ORDER BY rowid").map { try $0.value("loud") } == [
                .text("A"), .null,
            ])
    }

    @Test func aFunctionSQLiteRefusesIsAnError() throws {
        let database = try Database(.memory)
        // SQLite limits a function's name to 255 bytes.
        #expect(throws: SQLiteError.self) { try database.defineFunction(String(repeating: "f", count: 256)) { $0 } }
        #expect(throws: SQLiteError.self) { try database.query("SELECT \(String(repeating: "f", count: 256))(1)") }
    }

    @Test func theStatementObserverHearsEveryStatementRunFailedOrNotUntilItIsRemoved() throws {
        let database = try Database(.memory)
        var heard: [String] = []
        var total = Duration.zero
        database.statementObserver = { sql, took in
            heard.append(sql)
            total += took
        }
        try makeTable(database)
        try database.execute("INSERT INTO items(name) VALUES (?)", ["a"])
        #expect(throws: SQLiteError.self) { try database.execute("INSERT INTO items(name) VALUES (?)", ["a"]) }
        #expect(try names(database) == ["a"])
        let insert = "INSERT INTO items(name) VALUES (?)"
        #expect(
            heard == [
                "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)", insert, insert,
                "SELECT name FROM items ORDER BY id",
            ])
        #expect(total > .zero)
        database.statementObserver = nil
        _ = try names(database)
        #expect(heard.count == 4)
    }

    @Test func memoryDatabasesAreSeparate() throws {
        let first = try Database(.memory)
        try makeTable(first)
        #expect(throws: SQLiteError.self) { try Database(.memory).query("SELECT * FROM items") }
    }

    @Test func newFileIsOwnerOnlyIncludingWALAndSharedMemory() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(.file(path: path))
            try makeTable(database)
            try database.execute("INSERT INTO items(name) VALUES ('a')")
            #expect(try permissions(path) == 0o600)
            #expect(try permissions(path + "-wal") == 0o600)
            #expect(try permissions(path + "-shm") == 0o600)
        }
    }

    @Test func existingFileIsNarrowedToOwnerOnly() throws {
        try withTemporaryDatabasePath { path in
            let files = FileManager.default
            #expect(files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
            #expect(files.createFile(atPath: path + "-wal", contents: nil, attributes: [.posixPermissions: 0o666]))
            _ = try Database(.file(path: path))
            #expect(try permissions(path) == 0o600)
            #expect(try permissions(path + "-wal") == 0o600)
        }
    }

    /// In WAL mode a connection holds a read lock on the file while it is open, which tells another
    /// process's SQLite, closing the last connection it has, not to delete the log under this one.
    /// POSIX locks are the process's: a descriptor of the file closed anywhere in it drops them all.
    @Test func aSecondConnectionKeepsTheLockThatGuardsTheFirstsLog() throws {
        try withTemporaryDatabasePath { path in
            let first = try Database(.file(path: path))
            try makeTable(first)
            try first.execute("INSERT INTO items(name) VALUES ('a')")
            #expect(try locksHeld(on: path) > 0)
            let second = try Database(.file(path: path))
            #expect(try names(second) == ["a"])
            #expect(try locksHeld(on: path) > 0)
            try first.execute("INSERT INTO items(name) VALUES ('b')")
            #expect(try locksHeld(on: path) > 0)
        }
    }

    /// What that lock is for: another process (an operator's `sqlite3 .backup`, here Python's sqlite3)
    /// closing its connection must leave the log of this one, whose later writes it must then read.
    @Test func anotherProcessClosingItsConnectionLeavesTheLogOfAnOpenOne() throws {
        try withTemporaryDatabasePath { path in
            let first = try Database(.file(path: path))
            try makeTable(first)
            try first.execute("INSERT INTO items(name) VALUES ('a')")
            _ = try Database(.file(path: path))  // the way the background checkpointer connects
            let reader = Process()
            reader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            reader.arguments = [
                "python3", "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM items').fetchall(); c.close()",
                path,
            ]
            try reader.run()
            reader.waitUntilExit()
            #expect(reader.terminationStatus == 0)
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
            try first.execute("INSERT INTO items(name) VALUES ('b')")
            #expect(try names(Database(.file(path: path))) == ["a", "b"])
        }
    }

    /// The POSIX locks this process holds on `path`'s file, from /proc/locks.
    private func locksHeld(on path: String) throws -> Int {
        var status = stat()
        #expect(stat(path, &status) == 0)
        let locks = try String(contentsOfFile: "/proc/locks", encoding: .utf8)
        return locks.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ")
            // "1: POSIX  ADVISORY  READ 1234 fe:00:5678 1073741826 1073742335"
            return fields.count >= 6 && fields[1] == "POSIX" && fields[4] == "\(getpid())"
                && fields[5].split(separator: ":").last == "\(status.st_ino)"
        }.count
    }

    /// A commit survives a power loss unless the caller asks for less.
    @Test func fileUsesWALAndFullSyncByDefault() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(.file(path: path))
            #expect(try database.query("PRAGMA journal_mode").first?[0] == .text("wal"))
            #expect(try database.query("PRAGMA synchronous").first?[0] == .integer(2))  // FULL
            #expect(try database.query("PRAGMA busy_timeout").first?[0] == .integer(5000))
        }
    }

    @Test func normalSyncIsTheCallersChoice() throws {
        try withTemporaryDatabasePath { path in
            let database = try Database(.file(path: path), synchronous: .normal)
            #expect(try database.query("PRAGMA synchronous").first?[0] == .integer(1))  // NORMAL
        }
    }

    @Test func foreignKeysAreEnforced() throws {
        let database = try Database(.memory)
        try database.executeScript(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(parent INTEGER NOT NULL REFERENCES parent(id));
            """)
        let error = #expect(throws: SQLiteError.self) { try database.execute("INSERT INTO child VALUES (1)") }
        #expect(error?.code == 787)  // SQLITE_CONSTRAINT_FOREIGNKEY
    }

    @Test func reopenedFileKeepsData() throws {
        try withTemporaryDatabasePath { path in
            do {
                let database = try Database(.file(path: path))
                try makeTable(database)
                try database.execute("INSERT INTO items(name) VALUES ('kept')")
            }
            #expect(try names(Database(.file(path: path))) == ["kept"])
        }
    }

    @Test func unopenablePathThrows() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-\(UUID())/db.sqlite").path
        let error = #expect(throws: SQLiteError.self) { try Database(.file(path: path)) }
        #expect(error?.code == 14)  // SQLITE_CANTOPEN
        #expect(error?.message.contains(path) == true)
    }

    @Test func syntaxErrorCarriesTheSQL() throws {
        let error = #expect(throws: SQLiteError.self) { try Database(.memory).query("SELEC 1") }
        #expect(error?.code == 1)
        #expect(error?.message.contains("syntax error") == true)
        #expect(error?.sql == "SELEC 1")
        #expect(error?.description.contains("SELEC 1") == true)
    }

    @Test func scriptRunsEveryStatementAndReportsItsSQL() throws {
        let database = try Database(.memory)
        try database.executeScript("CREATE TABLE a(x); CREATE TABLE b(y); INSERT INTO b VALUES (1);")
        #expect(try database.query("SELECT y FROM b").first?.decodeIfPresent("y", \.int64Value) == 1)
        let error = #expect(throws: SQLiteError.self) { try database.executeScript("DROP TABLE a; DROP TABLE a") }
        #expect(error?.sql == "DROP TABLE a; DROP TABLE a")
        #expect(error?.message.contains("no such table") == true)
    }

    @Test func changesAndLastInsertRowID() throws {
        let database = try Database(.memory)
        try makeTable(database)
        try database.execute("INSERT INTO items(name) VALUES ('a'), ('b'), ('c')")
        #expect(database.changes == 3)
        #expect(database.lastInsertRowID == 3)
        try database.execute("DELETE FROM items WHERE id < ?", [3])
        #expect(database.changes == 2)
    }

    @Test func transactionCommitsAndReturnsTheResult() throws {
        let database = try Database(.memory)
        try makeTable(database)
        let id = try database.transaction { database in
            try database.execute("INSERT INTO items(name) VALUES ('a')")
            try database.execute("INSERT INTO items(name) VALUES ('b')")
            return database.lastInsertRowID
        }
        #expect(id == 2)
        #expect(try names(database) == ["a", "b"])
        #expect(!database.isInTransaction)
    }

    @Test func transactionRollsBackAndRethrowsTheBodysError() throws {
        let database = try Database(.memory)
        try makeTable(database)
        #expect(throws: Abort()) {
            try database.transaction { database in
                try database.execute("INSERT INTO items(name) VALUES ('a')")
                throw Abort()
            }
        }
        #expect(try names(database).isEmpty)
        #expect(!database.isInTransaction)
    }

    @Test func transactionRollsBackOnAFailingStatement() throws {
        let database = try Database(.memory)
        try makeTable(database)
        let error = #expect(throws: SQLiteError.self) {
            try database.transaction { database in
                try database.execute("INSERT INTO items(name) VALUES ('a')")
                try database.execute("INSERT INTO items(name) VALUES ('a')")
            }
        }
        #expect(error?.code == 2067)  // the unique violation, not a later ROLLBACK problem
        #expect(try names(database).isEmpty)
    }

    @Test func failedCommitRollsBackAndRethrows() throws {
        let database = try Database(.memory)
        try database.executeScript(
            """
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(parent INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);
            """)
        let error = #expect(throws: SQLiteError.self) {
            try database.transaction { database in
                try database.execute("INSERT INTO child VALUES (1)")  // checked only at COMMIT
            }
        }
        #expect(error?.sql == "COMMIT")
        #expect(!database.isInTransaction)
        #expect(try database.query("SELECT * FROM child").isEmpty)
    }

    @Test func nestedTransactionIsRefusedAndTheOuterRollsBack() throws {
        let database = try Database(.memory)
        try makeTable(database)
        #expect(throws: SQLiteError.self) {
            try database.transaction { database in
                try database.execute("INSERT INTO items(name) VALUES ('a')")
                try database.transaction { _ in }
            }
        }
        #expect(try names(database).isEmpty)
    }

    @Test func queryOneReturnsTheFirstRow() throws {
        let row = try Database(.memory).queryOne("SELECT count(*) AS n FROM sqlite_schema")
        #expect(try row.decode("n", \.int64Value) == 0)
    }

    /// A statement that must return a row and returns none is an error naming it, not a default.
    @Test func queryOneWithoutARowThrowsNamingTheStatement() throws {
        let error = #expect(throws: RowDecodingError.self) {
            try Database(.memory).queryOne("SELECT name FROM sqlite_schema")
        }
        #expect(error?.description == #"no row from "SELECT name FROM sqlite_schema""#)
    }
}
