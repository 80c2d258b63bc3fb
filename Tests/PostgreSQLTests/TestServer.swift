import Foundation
import Testing
import XMPPTesting

/// One PostgreSQL for the whole test process, started on first use; each test works in a schema of
/// its own, so tests running in parallel do not see each other's tables.
enum TestServer {
    private static let started = Task { () throws -> PostgreSQLServer in
        let server = try PostgreSQLServer()
        try await server.start()
        return server
    }

    static var url: String {
        get async throws { try await started.value.url }
    }
}
