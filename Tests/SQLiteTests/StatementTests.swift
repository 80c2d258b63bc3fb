import CSQLite
import Testing

import SQLCore

@testable import SQLite

@Suite struct StatementTests {
    static let values: [SQLValue] = [
        .null,
        .integer(0), .integer(.min), .integer(.max),
        .real(3.25), .real(-1e300), .real(.leastNonzeroMagnitude),
        .text(""), .text("héllo wörld 🎉 中文 עברית"), .text("nul\u{0}inside"),
        .blob([]), .blob([0, 255, 0]), .blob(Array(0...255)),
    ]

    @Test(arguments: values)
    func bindingRoundTripsThroughATable(value: SQLValue) throws {
        let database = try Database(.memory)
        try database.execute("CREATE TABLE t(v)")  // no declared type: no affinity conversion
        try database.execute("INSERT INTO t VALUES (?)", [value])
        #expect(try database.query("SELECT v FROM t").first?.value("v") == value)
    }

    @Test func emptyBlobIsABlobNotNull() throws {
        let rows = try Database(.memory).query("SELECT typeof(?) AS type, length(?) AS length", [.blob([]), .blob([])])
        #expect(try rows.first?.decode("type", \.stringValue) == "blob")
        #expect(try rows.first?.decode("length", \.int64Value) == 0)
    }

    @Test func repeatedSQLReusesOnePreparedStatement() throws {
        let database = try Database(.memory)
        try database.execute("CREATE TABLE t(n INTEGER)")
        let sql = "INSERT INTO t VALUES (?)"
        for n in 0..<500 {
            try database.execute(sql, [.integer(Int64(n))])
        }
        let statement = try database.cachedStatement(sql)
        #expect(try database.cachedStatement(sql) === statement)
        #expect(sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_RUN, 0) == 500)
        let sums = try database.queryOne("SELECT count(*) AS n, sum(n) AS total FROM t")
        #expect(try sums.decode("total", \.int64Value) == 124_750)
    }

    /// A cached `SELECT *` keeps its column names between calls, and reads them anew once a schema
    /// change made SQLite prepare it again (a column added, another renamed).
    @Test func aCachedQuerysColumnsFollowASchemaChange() throws {
        let database = try Database(.memory)
        try database.execute("CREATE TABLE t(a INTEGER)")
        try database.execute("INSERT INTO t VALUES (1)")
        #expect(try database.query("SELECT * FROM t").first?.columns == ["a"])
        #expect(try database.query("SELECT * FROM t").first?.columns == ["a"])
        try database.executeScript("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'; ALTER TABLE t RENAME COLUMN a TO c")
        let row = try #require(try database.query("SELECT * FROM t").first)
        #expect(row.columns == ["c", "b"])
        #expect(try row.decode("c", \.int64Value) == 1)
        #expect(try row.decode("b", \.stringValue) == "x")
    }

    @Test func cachedStatementIsReusableAfterAFailure() throws {
        let database = try Database(.memory)
        try database.execute("CREATE TABLE t(name TEXT PRIMARY KEY)")
        let sql = "INSERT INTO t VALUES (?)"
        try database.execute(sql, ["a"])
        #expect(throws: SQLiteError.self) { try database.execute(sql, ["a"]) }
        try database.execute(sql, ["b"])
        #expect(
            try database.query("SELECT name FROM t ORDER BY name").map { try $0.decode("name", \.stringValue) }
                == ["a", "b"])
    }

    @Test(arguments: [[], [SQLValue.integer(1), .integer(2)]])
    func wrongNumberOfBindingsIsRefused(bindings: [SQLValue]) throws {
        let error = #expect(throws: SQLiteError.self) {
            try Database(.memory).query("SELECT ?", bindings)
        }
        #expect(error?.code == SQLITE_RANGE)
        #expect(error?.sql == "SELECT ?")
    }

    @Test func secondStatementIsRefusedNotIgnored() throws {
        let database = try Database(.memory)
        try database.execute("CREATE TABLE t(n)")
        let error = #expect(throws: SQLiteError.self) {
            try database.execute("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")
        }
        #expect(error?.code == SQLITE_MISUSE)
        #expect(try database.query("SELECT n FROM t").isEmpty)
    }

    @Test func trailingSemicolonAndCommentAreAccepted() throws {
        #expect(try Database(.memory).queryOne("SELECT 1 AS one; -- done\n").decode("one", \.int64Value) == 1)
    }

    @Test func emptySQLIsRefused() throws {
        #expect(throws: SQLiteError.self) { try Database(.memory).execute("  ") }
    }
}

/// The rows a statement returns name it in their decoding errors.
@Suite struct StatementRowTests {
    @Test func aDecodingErrorNamesTheStatementThatReturnedTheRow() throws {
        let row = try #require(try Database(.memory).query("SELECT 'x' AS n").first)
        let error = #expect(throws: RowDecodingError.self) { try row.decode("n", \.int64Value) }
        #expect(error?.description == #"column n holds an unexpected TEXT in "SELECT 'x' AS n""#)
    }

    /// A column the statement does not return (a table changed by hand) is an error, not a trap.
    @Test func aColumnTheStatementDoesNotReturnIsAnError() throws {
        let row = try #require(try Database(.memory).query("SELECT 1 AS a").first)
        let error = #expect(throws: RowDecodingError.self) { try row.decodeIfPresent("b", \.int64Value) }
        #expect(error?.description == #"no column b in "SELECT 1 AS a""#)
        #expect(row.unknownValue("b") == RowDecodingError(.missingColumn("b"), sql: "SELECT 1 AS a"))
    }

    @Test func firstOfDuplicateColumnNamesWins() throws {
        let rows = try Database(.memory).query("SELECT 1 AS x, 2 AS x")
        #expect(try rows.first?.decode("x", \.int64Value) == 1)
    }
}
