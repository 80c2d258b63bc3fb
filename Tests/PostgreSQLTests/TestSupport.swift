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

/// A connection whose statements run in a fresh schema of its own, dropped at the end. On a Dispatch
/// thread: libpq blocks until the server answers, and a test must not hold one of the cooperative
/// pool's few threads meanwhile (under a sanitizer on two cores, two such tests stalled every other).
func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
    let url = try await TestServer.url
    return try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async {
            continuation.resume(
                with: Result {
                    let connection = try Connection(url)
                    let schema = "test_\(UUID().uuidString.prefix(8).lowercased())"
                    try connection.executeScript("CREATE SCHEMA \(schema); SET search_path TO \(schema)")
                    defer { _ = try? connection.execute("DROP SCHEMA \(schema) CASCADE") }
                    return try body(connection)
                })
        }
    }
}
