import Foundation
import Synchronization
public import Sockets
import BlockingWork

/// A raw HTTP/1.1 peer for tests: sends bytes as given (well formed or not) and reads until the server
/// closes, so a test sees exactly what was answered, or that nothing was.
public enum HTTPTestClient {
    /// Sends `bytes` to 127.0.0.1:`port` and returns all the server sent before closing; nil when it
    /// did not close within `timeout` (the client closes then).
    public static func exchange(_ bytes: [UInt8], port: UInt16, timeout: Duration = .seconds(10)) async throws
        -> String?
    {
        let connection = try await TCPConnection.connect(host: "127.0.0.1", port: port)
        defer { connection.close() }
        // A send that blocks until the server reads (a large body) must not hold a thread the server needs.
        if !bytes.isEmpty { try await BlockingWork.run { try connection.send(bytes) } }
        return await readToEnd(connection, timeout: timeout)
    }

    /// All `connection` receives until the peer closes; nil when it did not within `timeout`.
    public static func readToEnd(_ connection: TCPConnection, timeout: Duration) async -> String? {
        let timedOut = Mutex(false)
        let timer = Task {
            try await Task.sleep(for: timeout)
            timedOut.withLock { $0 = true }
            connection.close()
        }
        defer { timer.cancel() }
        var received: [UInt8] = []
        do {
            for try await chunk in connection.incoming() { received += chunk }
        } catch {}  // a reset after the server closed ends it too
        return timedOut.withLock { $0 } ? nil : String(decoding: received, as: UTF8.self)
    }

    /// A well-formed request for `path`; the status code and the body of the answer.
    public static func request(_ path: String, method: String = "GET", port: UInt16) async throws -> (
        status: Int, body: String
    ) {
        let answer = try await exchange(
            Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8), port: port)
        guard let answer, let statusLine = answer.split(separator: "\r\n", maxSplits: 1).first,
            let code = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw HTTPTestClientError(answer: answer ?? "(no answer within the timeout)") }
        let body = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (code, body)
    }
}

public struct HTTPTestClientError: Error, CustomStringConvertible {
    public var answer: String
    public var description: String { "not an HTTP answer: \(answer.prefix(200))" }
}
