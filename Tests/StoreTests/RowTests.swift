import Testing

@testable import Store

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
