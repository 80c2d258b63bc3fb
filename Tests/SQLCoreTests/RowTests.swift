import Testing

@testable import SQLCore

@Suite struct RowTests {
    let row = Row(
        columns: ["id", "name", "score", "data", "flag", "missing"],
        values: [.integer(1), .text("ann"), .real(0.5), .blob([9]), .integer(1), .null])

    @Test func readsByNameAndPosition() throws {
        #expect(try row.value("name") == .text("ann"))
        #expect(row[0] == .integer(1))
        #expect(row.contains("score"))
        #expect(!row.contains("nope"))
    }

    @Test func decodeReadsAValueOfTheColumnsTypeAndThrowsOnAnyOther() throws {
        #expect(try row.decode("id", \.int64Value) == 1)
        #expect(try row.decode("name", \.stringValue) == "ann")
        #expect(try row.decode("score", \.doubleValue) == 0.5)
        #expect(try row.decode("data", \.bytesValue) == [9])
        #expect(try row.decode("flag", \.boolValue) == true)
        #expect(throws: RowDecodingError(.mismatch(column: "name", storageClass: "TEXT"), sql: nil)) {
            try row.decode("name", \.int64Value)
        }
    }

    @Test func aNullWhereAValueIsRequiredThrows() {
        #expect(throws: RowDecodingError(.mismatch(column: "missing", storageClass: "NULL"), sql: nil)) {
            try row.decode("missing", \.stringValue)
        }
    }

    @Test func decodeIfPresentReadsNullAsNilAndThrowsOnAnotherType() throws {
        #expect(try row.decodeIfPresent("missing", \.int64Value) == nil)
        #expect(try row.decodeIfPresent("score", \.doubleValue) == 0.5)
        #expect(throws: RowDecodingError(.mismatch(column: "score", storageClass: "REAL"), sql: nil)) {
            try row.decodeIfPresent("score", \.stringValue)
        }
    }

    @Test func aDecodingErrorNamesTheColumnAndStorageClassNeverTheValue() {
        let row = Row(columns: ["token"], values: [.text("secret-token")], sql: "SELECT token FROM t")
        let error = #expect(throws: RowDecodingError.self) { try row.decode("token", \.int64Value) }
        #expect(error?.description == #"column token holds an unexpected TEXT in "SELECT token FROM t""#)
        #expect(
            row.unknownValue("token").description
                == #"column token holds a TEXT that is no value this build knows in "SELECT token FROM t""#)
    }
}
