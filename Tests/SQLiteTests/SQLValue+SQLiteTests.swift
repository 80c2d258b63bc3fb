import SQLCore
import Testing

@testable import SQLite

@Suite struct SQLValueSQLiteTests {
    /// Each storage class goes into a SQL function and comes back out as it went in: read from the
    /// argument, set as the result.
    @Test(arguments: [
        SQLValue.null, .integer(-7), .real(2.5), .text("zürich"), .text(""), .blob([0, 1, 255]), .blob([]),
    ])
    func aValueCrossesAFunctionUnchanged(value: SQLValue) throws {
        let database = try Database(.memory)
        try database.defineFunction("same") { $0 }
        #expect(try database.queryOne("SELECT same(?) AS v", [value]).value("v") == value)
    }
}
