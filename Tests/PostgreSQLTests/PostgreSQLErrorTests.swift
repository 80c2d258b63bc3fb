import Testing

@testable import PostgreSQL

@Suite struct PostgreSQLErrorTests {
    @Test(arguments: [
        ("40001", true), ("40P01", true), ("55P03", true), ("57014", true), ("57P01", true), ("57P03", true),
        ("08006", true),
        ("53100", true), ("23505", false), ("42P01", false), ("22021", false),
    ])
    func whetherAnErrorMayPassFollowsItsSQLState(sqlState: String, mayPass: Bool) {
        #expect(PostgreSQLError(sqlState: sqlState, message: "m").mayPass == mayPass)
    }

    @Test func aLostConnectionMayPassWhateverItsState() {
        #expect(PostgreSQLError(sqlState: nil, message: "gone", connectionLost: true).mayPass)
        #expect(!PostgreSQLError(sqlState: nil, message: "refused").mayPass)
    }

    @Test func onlyASerializationFailureOrADeadlockIsAConflictToRunAgain() {
        #expect(PostgreSQLError(sqlState: "40001", message: "m").isTransactionConflict)
        #expect(PostgreSQLError(sqlState: "40P01", message: "m").isTransactionConflict)
        #expect(!PostgreSQLError(sqlState: "57P01", message: "m").isTransactionConflict)
    }

    @Test func theDescriptionNamesTheStateAndTheStatement() {
        #expect(
            "\(PostgreSQLError(sqlState: "23505", message: "duplicate key", sql: "INSERT"))"
                == "PostgreSQL error 23505: duplicate key in \"INSERT\"")
        #expect(
            "\(PostgreSQLError(sqlState: nil, message: "refused", connectionLost: true))"
                == "PostgreSQL error (connection lost): refused")
    }
}
