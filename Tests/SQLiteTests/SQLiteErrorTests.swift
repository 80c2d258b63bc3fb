import SQLCore
import CSQLite
import SQLiteTesting
import Testing

@testable import SQLite

@Suite struct SQLiteErrorTests {
    @Test func descriptionNamesCodeMessageAndSQL() {
        let error = SQLiteError(code: 1, message: "near \"SELEC\": syntax error", sql: "SELEC 1")
        #expect(error.description == "SQLite error 1: near \"SELEC\": syntax error in \"SELEC 1\"")
    }

    @Test func descriptionWithoutSQLOmitsIt() {
        #expect(SQLiteError(code: 14, message: "unable to open").description == "SQLite error 14: unable to open")
    }

    @Test func uniqueViolationCarriesExtendedCodeAndPrimaryCode() throws {
        let database = try Database(.memory)
        try database.execute("CREATE TABLE t(name TEXT UNIQUE)")
        try database.execute("INSERT INTO t VALUES (?)", ["a"])
        let error = #expect(throws: SQLiteError.self) {
            try database.execute("INSERT INTO t VALUES (?)", ["a"])
        }
        #expect(error?.code == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(error?.primaryCode == 19)  // SQLITE_CONSTRAINT
        #expect(error?.message.contains("UNIQUE") == true)
        #expect(error?.sql == "INSERT INTO t VALUES (?)")
    }

    @Test func theFaultsThatMayPassAreTheFileSystemsAndLocks() {
        for code in [
            SQLITE_READONLY, SQLITE_FULL, sqliteIOErrorWrite, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_BUSY,
        ] {
            #expect(SQLiteError(code: code, message: "").mayPass, "\(code)")
        }
        for code in [SQLITE_ERROR, SQLITE_CORRUPT, SQLITE_NOTADB, sqliteConstraintUnique, SQLITE_MISUSE] {
            #expect(!SQLiteError(code: code, message: "").mayPass, "\(code)")
        }
    }

    @Test func thePrimaryDescriptionIsSQLitesWordsForThePrimaryCode() {
        #expect(SQLiteError(code: sqliteIOErrorWrite, message: "").primaryDescription == "disk I/O error")
    }
}
