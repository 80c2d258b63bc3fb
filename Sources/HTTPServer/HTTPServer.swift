import Dispatch
public import Logging
import Synchronization
import Sockets
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
/// not complete within the timeout closes the connection unanswered. Past `maxConnections`, a new
/// connection takes the place of the oldest one still waiting for its request (so idle peers cannot
/// keep a probe out), or is closed at once when every connection is being answered. An accept that
/// fails (no descriptor left) is tried again with pauses, logged once, and counted
/// (`acceptFailures`). Idle, it uses no CPU: one thread blocks in accept(2).
public final class HTTPServer: Sendable {
    public struct Settings: Sendable {
        /// Connections served at once (each has a reader thread while it lasts).
        public var maxConnections = 16
        /// From accept to the end of the request line: a peer that sends nothing is cut off sooner than
        /// one whose head is on its way.
        public var requestLineTimeout: Duration = .seconds(2)
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
    private let accepted: AsyncStream<Connections.Admitted>
    private let connections: Connections
    private let acceptFaults: AcceptFaults

    /// Connections being served, in the order they came, and whether the server still takes them.
    private final class Connections: Sendable {
        struct Admitted: Sendable {
            let id: UInt64
            let connection: TCPConnection
        }

        private struct State {
            /// Each open connection, and whether its request head is still awaited (it may be evicted).
            var open: [UInt64: (connection: TCPConnection, awaitingHead: Bool)] = [:]
            var nextID: UInt64 = 0
            var stopped = false
        }

        private let state = Mutex(State())
        let continuation: AsyncStream<Admitted>.Continuation

        init(continuation: AsyncStream<Admitted>.Continuation) { self.continuation = continuation }

        /// Takes a new connection, in place of the oldest one still awaiting its head when the server is
        /// full; closes it when every slot is answering, or the server is stopped.
        func admit(_ connection: TCPConnection, max: Int) {
            let (admitted, evicted) = state.withLock { state -> (UInt64?, TCPConnection?) in
                guard !state.stopped else { return (nil, nil) }
                var evicted: TCPConnection?
                if state.open.count >= max {
                    guard let oldest = state.open.filter(\.value.awaitingHead).keys.min() else { return (nil, nil) }
                    evicted = state.open.removeValue(forKey: oldest)?.connection
                }
                let id = state.nextID
                state.nextID += 1
                state.open[id] = (connection, true)
                return (id, evicted)
            }
            evicted?.close()
            guard let admitted, case .enqueued = continuation.yield(Admitted(id: admitted, connection: connection))
            else {
                if let admitted { ended(admitted) }
                connection.close()
                return
            }
        }

        /// The connection's request head has come: it is answered, not evicted.
        func answering(_ id: UInt64) { state.withLock { _ = $0.open[id]?.awaitingHead = false } }

        func ended(_ id: UInt64) { state.withLock { _ = $0.open.removeValue(forKey: id) } }

        func stop() {
            state.withLock { $0.stopped = true }
            continuation.finish()
        }
    }

    /// Runs of failing accepts: counted, and logged once as each starts and ends.
    private final class AcceptFaults: Sendable {
        private let failures = Mutex(0)
        private let logger: Logger

        init(logger: Logger) { self.logger = logger }

        var count: Int { failures.withLock { $0 } }

        func record(_ state: TCPListener.AcceptState) {
            switch state {
            case .failing(let error):
                failures.withLock { $0 += 1 }
                logger.error("cannot accept connections, trying again with pauses: \(error)")
            case .accepting:
                logger.notice("accepting connections again")
            }
        }
    }

    /// Listens on `host:port` at once (so a taken port fails here, at start); `run` serves.
    public init(
        host: String, port: UInt16, routes: [HTTPRoute], settings: Settings = Settings(), logger: Logger
    ) throws {
        self.settings = settings
        self.routes = Dictionary(routes.map { ($0.path, $0.handler) }, uniquingKeysWith: { first, _ in first })
        self.logger = logger
        let (stream, continuation) = AsyncStream<Connections.Admitted>.makeStream()
        accepted = stream
        let connections = Connections(continuation: continuation)
        self.connections = connections
        let acceptFaults = AcceptFaults(logger: logger)
        self.acceptFaults = acceptFaults
        let maxConnections = settings.maxConnections
        listener = try TCPListener(
            host: host, port: port, sendTimeoutSeconds: 10, onAcceptState: acceptFaults.record
        ) {
            connections.admit($0, max: maxConnections)
        }
        self.port = listener.port
    }

    /// How many times accepting connections started to fail since the server started (each such run
    /// is tried again with pauses until accepting works).
    public var acceptFailures: Int { acceptFaults.count }

    /// Serves until the calling task is cancelled; then stops listening and closes every connection.
    public func run() async {
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for await admitted in accepted {
                    group.addTask { await self.serve(admitted) }
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

    private func serve(_ admitted: Connections.Admitted) async {
        let connection = admitted.connection
        let lineDeadline = Self.close(connection, after: settings.requestLineTimeout)
        let headDeadline = Self.close(connection, after: settings.requestTimeout)
        let answerDeadline = Self.close(connection, after: settings.answerTimeout)
        defer {
            lineDeadline.cancel()
            headDeadline.cancel()
            answerDeadline.cancel()
            connection.close()
            connections.ended(admitted.id)
        }
        var reader = HTTPRequestReader(limits: settings.limits)
        var chunks = connection.incoming(chunkSize: 4096).makeAsyncIterator()
        do {
            while let chunk = try await chunks.next() {
                if chunk.contains(UInt8(ascii: "\n")) { lineDeadline.cancel() }
                guard let outcome = reader.read(chunk) else { continue }
                headDeadline.cancel()
                connections.answering(admitted.id)
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
