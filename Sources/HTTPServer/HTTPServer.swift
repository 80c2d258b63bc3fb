import Dispatch
public import Logging
import Synchronization
import XMPP
import BlockingWork

/// A page the server answers GET and HEAD for.
public struct HTTPRoute: Sendable {
    public let path: String
    public let handler: @Sendable () async -> HTTPResponse

    public init(_ path: String, handler: @escaping @Sendable () async -> HTTPResponse) {
        self.path = path
        self.handler = handler
    }
}

/// A small, strict HTTP/1.1 server for a few read-only pages (health and metrics): one request per
/// connection, answered and closed (what the peer still sends, a body never read, is read and dropped
/// for a moment first, so that the close does not reset the answer away). A head over the limit or
/// not complete within the timeout closes the connection unanswered; past `maxConnections` a new
/// connection is closed at once. Idle, it uses no CPU: one thread blocks in accept(2).
public final class HTTPServer: Sendable {
    public struct Settings: Sendable {
        /// Connections served at once (each has a reader thread while it lasts).
        public var maxConnections = 16
        /// From accept to the whole request head: a slower peer is cut off unanswered.
        public var requestTimeout: Duration = .seconds(5)
        /// From accept to the answer sent: a page that cannot be made (a store that hangs) or a peer
        /// that does not read it still frees the connection.
        public var answerTimeout: Duration = .seconds(30)
        /// After the answer, how long what the peer still sends (a body never read) is read and dropped
        /// before the close, and how much of it at most: a socket closed with bytes unread is reset,
        /// and a reset can discard the answer before the peer has read it.
        public var lingerTimeout: Duration = .seconds(2)
        public var lingerBytes = 16 << 20
        public var limits = HTTPRequest.Limits()

        public init() {}
    }

    /// The port listened on (the one the kernel picked, when asked for port 0).
    public let port: UInt16
    private let settings: Settings
    private let routes: [String: @Sendable () async -> HTTPResponse]
    private let logger: Logger
    private let listener: TCPListener
    private let accepted: AsyncStream<TCPConnection>
    private let connections: Connections

    /// Connections being served, and whether the server still takes them.
    private final class Connections: Sendable {
        private let state = Mutex((open: 0, stopped: false))
        let continuation: AsyncStream<TCPConnection>.Continuation

        init(continuation: AsyncStream<TCPConnection>.Continuation) { self.continuation = continuation }

        /// Takes a new connection unless the server is full or stopped; closes it otherwise.
        func admit(_ connection: TCPConnection, max: Int) {
            let admitted = state.withLock { state in
                guard !state.stopped, state.open < max else { return false }
                state.open += 1
                return true
            }
            guard admitted, case .enqueued = continuation.yield(connection) else {
                if admitted { ended() }
                connection.close()
                return
            }
        }

        func ended() { state.withLock { $0.open -= 1 } }

        func stop() {
            state.withLock { $0.stopped = true }
            continuation.finish()
        }
    }

    /// Listens on `host:port` at once (so a taken port fails here, at start); `run` serves.
    public init(
        host: String, port: UInt16, routes: [HTTPRoute], settings: Settings = Settings(), logger: Logger
    ) throws {
        self.settings = settings
        self.routes = Dictionary(routes.map { ($0.path, $0.handler) }, uniquingKeysWith: { first, _ in first })
        self.logger = logger
        let (stream, continuation) = AsyncStream<TCPConnection>.makeStream()
        accepted = stream
        let connections = Connections(continuation: continuation)
        self.connections = connections
        let maxConnections = settings.maxConnections
        listener = try TCPListener(host: host, port: port, sendTimeoutSeconds: 10) {
            connections.admit($0, max: maxConnections)
        }
        self.port = listener.port
    }

    /// Serves until the calling task is cancelled; then stops listening and closes every connection.
    public func run() async {
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for await connection in accepted {
                    group.addTask { await self.serve(connection) }
                }
            }
        } onCancel: {
            stop()
        }
        stop()
    }

    /// Stops listening; connections in progress end as their task is cancelled or answered.
    public func stop() {
        listener.close()
        connections.stop()
    }

    private func serve(_ connection: TCPConnection) async {
        let headDeadline = Self.close(connection, after: settings.requestTimeout)
        let answerDeadline = Self.close(connection, after: settings.answerTimeout)
        defer {
            headDeadline.cancel()
            answerDeadline.cancel()
            connection.close()
            connections.ended()
        }
        var reader = HTTPRequestReader(limits: settings.limits)
        var chunks = connection.incoming(chunkSize: 4096).makeAsyncIterator()
        do {
            while let chunk = try await chunks.next() {
                guard let outcome = reader.read(chunk) else { continue }
                headDeadline.cancel()
                switch outcome {
                case .success(let request):
                    let response = await Self.answer(request, routes: routes)
                    await Self.send(response.serialized(withBody: request.method != "HEAD"), on: connection)
                case .failure(.status(let status)):
                    logger.debug("refused an HTTP request: \(status.code)")
                    await Self.send(HTTPResponse.plain(status).serialized(), on: connection)
                case .failure(.tooLarge):
                    logger.debug(
                        "closed an HTTP connection: the request head is over \(settings.limits.maxHeadBytes) bytes")
                    return
                }
                try await linger(connection, reading: &chunks)
                return
            }
        } catch {
            logger.debug("an HTTP connection failed: \(error)")
        }
    }

    /// Says the answer is complete (a FIN), then lets the reader thread drop what the peer still sends
    /// until it closes, for at most `lingerTimeout` and `lingerBytes`.
    private func linger(_ connection: TCPConnection, reading chunks: inout TCPConnection.Incoming.Iterator)
        async throws
    {
        connection.finishSending()
        connection.discardIncoming(upTo: settings.lingerBytes)
        let deadline = Self.close(connection, after: settings.lingerTimeout)
        defer { deadline.cancel() }
        while try await chunks.next() != nil {}
    }

    /// Closes the connection when `timeout` has passed, unless cancelled first.
    private static func close(_ connection: TCPConnection, after timeout: Duration) -> Task<Void, any Error> {
        Task {
            try await Task.sleep(for: timeout)
            connection.close()
        }
    }

    /// The answer to a well-formed request: 405 for a method other than GET and HEAD, 404 for a path
    /// with no route.
    static func answer(_ request: HTTPRequest, routes: [String: @Sendable () async -> HTTPResponse]) async
        -> HTTPResponse
    {
        guard request.method == "GET" || request.method == "HEAD" else {
            return .plain(.methodNotAllowed, extraHeaders: ["Allow": "GET, HEAD"])
        }
        guard let handler = routes[request.path] else { return .plain(.notFound) }
        return await handler()
    }

    /// A send may wait for a slow peer (up to the socket's send timeout, or until the deadline closes
    /// it): it waits on a thread of its own (`BlockingWork`).
    private static func send(_ bytes: [UInt8], on connection: TCPConnection) async {
        await BlockingWork.run { try? connection.send(bytes) }
    }
}
