import Foundation
import PostgreSQL
import Testing
import LocalServers

/// The test process's PostgreSQL (`PostgreSQLServer.shared`); each test works in a schema of its own,
/// so tests running in parallel do not see each other's tables.
enum TestServer {
    static var url: String {
        get async throws { try await PostgreSQLServer.shared.url }
    }
}

/// A connection whose statements run in a fresh schema of its own, dropped at the end.
func withConnection<T>(_ body: (Connection) throws -> T) async throws -> T {
    let connection = try Connection(try await TestServer.url)
    let schema = "test_\(UUID().uuidString.prefix(8).lowercased())"
    try connection.executeScript("CREATE SCHEMA \(schema); SET search_path TO \(schema)")
    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
    return try body(connection)
}
