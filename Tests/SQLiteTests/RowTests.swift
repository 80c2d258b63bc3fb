import Testing

@testable import SQLite

@Suite struct RowTests {
    let row = Row(
        columns: ["id", "name", "score", "data", "flag", "missing"],
        values: [.integer(1), .text("ann"), .real(0.5), .blob([9]), .integer(1), .null])

    @Test func readsByNameAndPosition() {
        #expect(row["name"] == .text("ann"))
        #expect(row[0] == .integer(1))
        #expect(row.contains("score"))
        #expect(!row.contains("nope"))
    }

    @Test func typedAccessors() {
        #expect(row.int("id") == 1)
        #expect(row.string("name") == "ann")
        #expect(row.double("score") == 0.5)
        #expect(row.blob("data") == [9])
        #expect(row.bool("flag") == true)
    }

    @Test func nullReadsAsNilForEveryType() {
        #expect(row.int("missing") == nil)
        #expect(row.string("missing") == nil)
        #expect(row.double("missing") == nil)
        #expect(row.blob("missing") == nil)
        #expect(row.bool("missing") == nil)
    }

    @Test func decodeReadsAValueOfTheColumnsTypeAndThrowsOnAnyOther() throws {
        #expect(try row.decode("id", \.int64Value) == 1)
        #expect(try row.decode("data", \.bytesValue) == [9])
        #expect(throws: RowDecodingError(column: "name", value: .text("ann"))) { try row.decode("name", \.int64Value) }
        #expect(throws: RowDecodingError(column: "missing", value: .null)) { try row.decode("missing", \.stringValue) }
    }

    @Test func decodeIfPresentReadsNullAsNilAndThrowsOnAnotherType() throws {
        #expect(try row.decodeIfPresent("missing", \.int64Value) == nil)
        #expect(try row.decodeIfPresent("score", \.doubleValue) == 0.5)
        #expect(throws: RowDecodingError(column: "score", value: .real(0.5))) {
            try row.decodeIfPresent("score", \.stringValue)
        }
    }

    @Test func aDecodingErrorNamesTheColumnAndStorageClassNeverTheValue() {
        let error = RowDecodingError(column: "token", value: .text("secret-token"))
        #expect(error.description == "column token holds an unexpected TEXT")
    }

    @Test func firstOfDuplicateColumnNamesWins() throws {
        let rows = try Database(.memory).query("SELECT 1 AS x, 2 AS x")
        #expect(rows.first?.int("x") == 1)
    }

    @Test func unknownColumnTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = Row(columns: ["a"], values: [1])["b"]
        }
    }
}
