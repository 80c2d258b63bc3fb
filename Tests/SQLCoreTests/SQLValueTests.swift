import Testing

@testable import SQLCore

@Suite struct SQLValueTests {
    @Test func literalsBuildTheMatchingCase() {
        let values: [SQLValue] = [nil, 42, 1.5, "text", true, false]
        #expect(values == [.null, .integer(42), .real(1.5), .text("text"), .integer(1), .integer(0)])
    }

    @Test func accessorsReadOnlyTheirOwnStorageClass() {
        #expect(SQLValue.integer(7).int64Value == 7)
        #expect(SQLValue.text("7").int64Value == nil)
        #expect(SQLValue.text("a").stringValue == "a")
        #expect(SQLValue.blob([97]).stringValue == nil)
        #expect(SQLValue.blob([1, 2]).bytesValue == [1, 2])
        #expect(SQLValue.text("a").bytesValue == nil)
        #expect(SQLValue.null.int64Value == nil)
        #expect(SQLValue.null.isNull)
        #expect(!SQLValue.integer(0).isNull)
    }

    @Test func doubleAcceptsIntegers() {
        #expect(SQLValue.real(2.5).doubleValue == 2.5)
        #expect(SQLValue.integer(3).doubleValue == 3)
        #expect(SQLValue.text("3").doubleValue == nil)
    }

    @Test(arguments: [(SQLValue.integer(0), false), (.integer(1), true), (.integer(-5), true)])
    func boolIsNonZeroInteger(value: SQLValue, expected: Bool) {
        #expect(value.boolValue == expected)
    }

    @Test func boolOfNonIntegerIsNil() {
        #expect(SQLValue.null.boolValue == nil)
        #expect(SQLValue.text("true").boolValue == nil)
    }
}
