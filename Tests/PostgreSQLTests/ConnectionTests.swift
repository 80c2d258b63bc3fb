import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import SQLCore
import Testing
import LocalServers

@testable import PostgreSQL

/// The libpq connection against a real PostgreSQL 15.
@Suite struct ConnectionTests {
    @Test func parametersAndRowsKeepTheirTypes() async throws {
        try await withConnection { connection in
            try connection.execute(
                "CREATE TABLE item (id bigint, flag boolean, ratio double precision, name text, data bytea, note text)")
            let bytes: [UInt8] = [0, 1, 0xFF, 0x5C, 0x27]
            let inserted = try connection.execute(
                "INSERT INTO item VALUES ($1, $2, $3, $4, $5, $6)",
                [.integer(Int64.min), SQLValue(true), .real(0.25), .text("o'neil \\ ü"), .blob(bytes), .null])
            #expect(inserted == 1)
            let row = try connection.queryOne("SELECT * FROM item")
            #expect(try row.decode("id", \.int64Value) == Int64.min)
            #expect(try row.decode("flag", \.boolValue) == true)
            #expect(try row.decode("ratio", \.doubleValue) == 0.25)
            #expect(try row.decode("name", \.stringValue) == "o'neil \\ ü")
            #expect(try row.decode("data", \.bytesValue) == bytes)
            #expect(try row.decodeIfPresent("note", \.stringValue) == nil)
            #expect(throws: RowDecodingError.self) { try row.decode("name", \.int64Value) }
            #expect(throws: RowDecodingError.self) { try row.decode("note", \.stringValue) }
            #expect(throws: RowDecodingError.self) { try connection.queryOne("SELECT * FROM item WHERE false") }
        }
    }

    /// A listening session hears what another sends, and a write to the stop descriptor ends the
    /// wait; a session the server ended is an error, not a wait for ever.
    @Test func notificationsComeUntilAStopOrALostSession() async throws {
        let url = try await TestServer.url
        let channel = "test_\(UUID().uuidString.prefix(8).lowercased())"
        let listener = try Connection(url)
        try listener.execute("LISTEN \(channel)")
        let sender = try Connection(url)
        var stop: [Int32] = [-1, -1]
        try #require(pipe(&stop) == 0)
        defer { stop.forEach { close($0) } }

        try sender.execute("SELECT pg_notify($1, 'first'), pg_notify($1, 'second')", [.text(channel)])
        #expect(
            try listener.notifications(unlessReadable: stop[0]) == [
                ChannelNotification(channel: channel, payload: "first"),
                ChannelNotification(channel: channel, payload: "second"),
            ])
        var byte: UInt8 = 1
        #expect(write(stop[1], &byte, 1) == 1)
        #expect(try listener.notifications(unlessReadable: stop[0]) == nil)
        #expect(read(stop[0], &byte, 1) == 1)

        let backend = try listener.queryOne("SELECT pg_backend_pid() AS pid").decode("pid", \.int64Value)
        try sender.execute("SELECT pg_terminate_backend($1::integer)", [.integer(backend)])
        let error = #expect(throws: PostgreSQLError.self) { try listener.notifications(unlessReadable: stop[0]) }
        #expect(error?.connectionLost == true)
    }

    @Test func aNulInTextIsRefusedNotCutShort() async throws {
        try await withConnection { connection in
            let error = #expect(throws: PostgreSQLError.self) {
                try connection.query("SELECT $1::text AS value", [.text("tok\0en")])
            }
            #expect(error?.sqlState == "22021")
        }
    }

    @Test func errorsCarryTheSQLStateButNeverTheValues() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE token (value text PRIMARY KEY)")
            try connection.execute("INSERT INTO token VALUES ($1)", [.text("secret-token")])
            let error = #expect(throws: PostgreSQLError.self) {
                try connection.execute("INSERT INTO token VALUES ($1)", [.text("secret-token")])
            }
            #expect(error?.sqlState == PostgreSQLError.uniqueViolation)
            #expect(error?.mayPass == false)
            #expect(error.map { "\($0)".contains("secret-token") } == false)
            #expect(error.map { "\($0)".contains("INSERT INTO token") } == true)
        }
    }

    @Test func aTransactionCommitsOrRollsBackEverything() async throws {
        struct Injected: Error {}
        try await withConnection { connection in
            try connection.execute("CREATE TABLE counter (value bigint)")
            #expect(throws: Injected.self) {
                try connection.transaction { connection in
                    try connection.execute("INSERT INTO counter VALUES (1)")
                    throw Injected()
                }
            }
            #expect(!connection.isInTransaction)
            let sum = try connection.transaction { connection in
                try connection.execute("INSERT INTO counter VALUES (2)")
                return try connection.queryOne("SELECT sum(value)::bigint AS sum FROM counter").decode(
                    "sum", \.int64Value)
            }
            #expect(sum == 2)
            #expect(!connection.isInTransaction)
        }
    }

    /// Queued statements go with the next one that is read, in order and in one round trip; a
    /// transaction of writes alone is one round trip, its BEGIN and COMMIT included.
    @Test func queuedStatementsGoWithTheNextExchangeInOneRoundTrip() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE item (id bigint PRIMARY KEY, name text)")
            let before = connection.roundTrips
            try connection.enqueue("INSERT INTO item VALUES ($1, $2)", [.integer(1), .text("one")])
            try connection.enqueue("UPDATE item SET name = $1 WHERE id = $2", [.text("uno"), .integer(1)])
            #expect(connection.roundTrips == before)
            let rows = try connection.queries([
                ("SELECT name FROM item WHERE id = $1", [.integer(1)]),
                ("SELECT count(*) AS n FROM item", []),
            ])
            #expect(try rows[0].first?.decode("name", \.stringValue) == "uno")
            #expect(try rows[1].first?.decode("n", \.int64Value) == 1)
            #expect(connection.roundTrips == before + 1)

            try connection.transaction { connection in
                try connection.enqueue("INSERT INTO item VALUES ($1, $2)", [.integer(2), .text("two")])
                try connection.enqueue("INSERT INTO item VALUES ($1, $2)", [.integer(3), .text("three")])
            }
            #expect(connection.roundTrips == before + 2)
            #expect(try connection.queryOne("SELECT count(*) AS n FROM item").decode("n", \.int64Value) == 3)
        }
    }

    /// A statement with parameters is prepared the first time it is sent, in the same round trip, and
    /// run by its name after; the same text with other parameter types is another statement; one
    /// without parameters is sent unnamed. A prepared statement outlives a rolled-back transaction.
    @Test func aStatementWithParametersIsPreparedOnceInTheSameRoundTrip() async throws {
        try await withConnection { connection throws in
            let before = connection.roundTrips
            try (1...3).forEach { number throws in
                #expect(
                    try firstValue(connection, "SELECT $1::bigint + 1 AS n", [.integer(Int64(number))])
                        == .integer(Int64(number + 1)))
            }
            #expect(connection.roundTrips == before + 3)
            #expect(try preparedCount(connection) == 1)
            // A number and a null are both sent untyped: the same statement.
            #expect(try firstValue(connection, "SELECT $1::bigint + 1 AS n", [.null]) == .null)
            #expect(try preparedCount(connection) == 1)
            // Text is sent as text, a null untyped: two statements.
            #expect(try firstValue(connection, "SELECT $1::text AS t", [.text("a")]) == .text("a"))
            #expect(try firstValue(connection, "SELECT $1::text AS t", [.null]) == .null)
            #expect(try preparedCount(connection) == 3)

            #expect(throws: TestAbort.self) {
                try connection.transaction { connection in
                    _ = try connection.query("SELECT $1::text || 'b' AS t", [.text("a")])
                    throw TestAbort()
                }
            }
            #expect(try firstValue(connection, "SELECT $1::text || 'b' AS t", [.text("c")]) == .text("cb"))
            #expect(try preparedCount(connection) == 4)
        }
    }

    /// A statement whose preparation the server skipped (an earlier one in its pipeline failed), or
    /// refused (a mistake in it), is not taken for prepared: it is prepared again when next sent.
    @Test func aStatementIsTakenForPreparedOnlyOnceTheServerHasIt() async throws {
        try await withConnection { connection throws in
            try connection.enqueue("SELECT 1 / $1::int", [.integer(0)])
            #expect(throws: PostgreSQLError.self) { try connection.query("SELECT $1::text AS t", [.text("a")]) }
            #expect(try firstValue(connection, "SELECT $1::text AS t", [.text("b")]) == .text("b"))
            #expect(throws: PostgreSQLError.self) { try connection.query("SELEC $1::text", [.text("a")]) }
            #expect(throws: PostgreSQLError.self) { try connection.query("SELEC $1::text", [.text("a")]) }
            #expect(!connection.isBroken)
        }
    }

    /// A prepared statement whose table gained a column (another instance migrated the schema) fails
    /// once, as an error that may pass, and is prepared anew when next sent.
    @Test func aPreparedStatementGoneStaleIsPreparedAnew() async throws {
        try await withConnection { connection throws in
            try connection.execute("CREATE TABLE item (id bigint PRIMARY KEY)")
            try connection.execute("INSERT INTO item VALUES (1)")
            let select = "SELECT * FROM item WHERE id = $1"
            #expect(try connection.queryOne(select, [.integer(1)]).columns == ["id"])
            try connection.execute("ALTER TABLE item ADD COLUMN name text")
            let stale = #expect(throws: PostgreSQLError.self) { try connection.query(select, [.integer(1)]) }
            #expect(stale?.isStalePreparedStatement == true && stale?.mayPass == true)
            #expect(try connection.queryOne(select, [.integer(1)]).columns == ["id", "name"])
            // The same SQLSTATE for a statement never run before is the statement's own fault.
            let unsupported = #expect(throws: PostgreSQLError.self) {
                try connection.query("SELECT count(*) FROM item WHERE id = $1 FOR UPDATE", [.integer(1)])
            }
            #expect(unsupported?.sqlState == PostgreSQLError.featureNotSupported)
            #expect(unsupported?.isStalePreparedStatement == false && unsupported?.mayPass == false)
        }
    }

    /// A session prepares at most `preparedLimit` statements; past it they are sent unnamed, and work.
    @Test func pastItsLimitASessionSendsStatementsUnnamed() async throws {
        try await withConnection { connection throws in
            try (0..<(Connection.preparedLimit + 4)).forEach { number throws in
                #expect(
                    try firstValue(connection, "SELECT $1::bigint + \(number) AS n", [.integer(1)])
                        == .integer(Int64(number + 1)))
            }
            #expect(
                try connection.queryOne("SELECT count(*) AS n FROM pg_prepared_statements").decode("n", \.int64Value)
                    == Int64(Connection.preparedLimit))
        }
    }

    /// A queued statement's error is thrown by the call that sends it, the statements after it do not
    /// run, the transaction is rolled back, and the session serves the next one.
    @Test func aQueuedStatementsErrorIsThrownWhereItIsSentAndRollsBack() async throws {
        try await withConnection { connection in
            try connection.execute("CREATE TABLE item (id bigint PRIMARY KEY)")
            try connection.execute("INSERT INTO item VALUES (1)")
            var thrown: PostgreSQLError?
            do {
                try connection.transaction { connection in
                    try connection.enqueue("INSERT INTO item VALUES (2)")
                    try connection.enqueue("INSERT INTO item VALUES (1)")
                    try connection.enqueue("INSERT INTO item VALUES (3)")
                    _ = try connection.query("SELECT 1 AS one")
                    Issue.record("the statement after the failed one ran")
                }
            } catch let error as PostgreSQLError {
                thrown = error
            }
            #expect(thrown?.sqlState == PostgreSQLError.uniqueViolation)
            #expect(thrown.map { "\($0)".contains("INSERT INTO item VALUES (1)") } == true)
            #expect(!connection.isInTransaction)
            #expect(!connection.isBroken)
            #expect(try connection.queryOne("SELECT count(*) AS n FROM item").decode("n", \.int64Value) == 1)
            #expect(throws: PostgreSQLError.self) { try connection.enqueue("SELECT $1", [.text("a\u{0}b")]) }
        }
    }

    @Test func aConflictingSerializableTransactionFailsAsOneThatMayPass() async throws {
        let url = try await TestServer.url
        try await withConnection { first in
            try first.execute("CREATE TABLE balance (value bigint)")
            try first.execute("INSERT INTO balance VALUES (0)")
            let schema = try first.queryOne("SELECT current_schema() AS schema").decode("schema", \.stringValue)
            let second = try Connection(url)
            try second.executeScript("SET search_path TO \(schema)")
            try first.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            try second.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            _ = try first.query("SELECT value FROM balance")
            _ = try second.query("SELECT value FROM balance")
            try first.execute("UPDATE balance SET value = value + 1")
            try first.execute("COMMIT")
            let error = #expect(throws: PostgreSQLError.self) {
                try second.execute("UPDATE balance SET value = value + 1")
            }
            #expect(error?.sqlState == PostgreSQLError.serializationFailure)
            #expect(error?.mayPass == true && error?.isTransactionConflict == true)
            second.rollBackIfOpen()
            #expect(!second.isInTransaction)
        }
    }

    @Test func aRefusedConnectionMayPassAndNeverShowsThePassword() throws {
        let port = try TestPorts.next()
        let error = #expect(throws: PostgreSQLError.self) {
            try Connection("postgresql://apush:hunter2-secret@127.0.0.1:\(port)/apush")
        }
        #expect(error?.connectionLost == true && error?.mayPass == true)
        #expect(error.map { "\($0)".contains("hunter2") } == false)
    }

    @Test func aWrongPasswordIsRefusedWithoutShowingIt() async throws {
        let url = try await TestServer.url
        let wrong = url.replacingOccurrences(of: "apush:", with: "apush:hunter2-")
        let error = #expect(throws: PostgreSQLError.self) { try Connection(wrong) }
        #expect(error?.message.contains("password authentication failed") == true)
        #expect(error.map { "\($0)".contains("hunter2") } == false)
    }

    @Test func theTargetNamesTheServerButNotThePassword() async throws {
        let url = try await TestServer.url
        let connection = try Connection(url)
        let password = try #require(Connection.password(in: url))
        #expect(connection.target.hasPrefix("apush@127.0.0.1:"))
        #expect(connection.target.hasSuffix("/apush"))
        #expect(!connection.target.contains(password))
        #expect(Connection.masking(password: password, in: "no \(password) here") == "no *** here")
    }

    @Test func aLostSessionIsBrokenAndItsErrorMayPass() async throws {
        let url = try await TestServer.url
        let connection = try Connection(url)
        let pid = try connection.queryOne("SELECT pg_backend_pid()::bigint AS pid").decode("pid", \.int64Value)
        let other = try Connection(url)
        try other.execute("SELECT pg_terminate_backend($1::integer)", [.integer(pid)])
        let error = #expect(throws: PostgreSQLError.self) { try connection.query("SELECT 1") }
        #expect(error?.mayPass == true)
        #expect(connection.isBroken)
    }
}

/// The first column of the one row `sql` returns.
private func firstValue(_ connection: Connection, _ sql: String, _ parameters: [SQLValue]) throws -> SQLValue {
    try connection.queryOne(sql, parameters)[0]
}

/// How many statements the session has prepared.
private func preparedCount(_ connection: Connection) throws -> Int64 {
    try connection.queryOne("SELECT count(*) AS n FROM pg_prepared_statements").decode("n", \.int64Value)
}

private struct TestAbort: Error {}
