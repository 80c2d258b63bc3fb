import Logging
import Testing
import Sockets
import TestSupport

@testable import HTTPServer

@Suite struct HTTPServerAnswerTests {
    private let routes: [String: @Sendable () async -> HTTPResponse] = ["/health": { HTTPResponse(.ok, body: "fine") }]

    private func request(_ method: String, _ path: String) -> HTTPRequest {
        HTTPRequest(method: method, path: path, version: .http11, headers: [("host", "a")])
    }

    @Test(arguments: ["GET", "HEAD"])
    func aRouteAnswersGetAndHead(_ method: String) async {
        #expect(await HTTPServer.answer(request(method, "/health"), routes: routes).body == Array("fine".utf8))
    }

    @Test func anUnknownPathIsNotFound() async {
        #expect(await HTTPServer.answer(request("GET", "/healthz"), routes: routes).status == .notFound)
    }

    @Test(arguments: ["POST", "PUT", "DELETE", "OPTIONS", "BREW"])
    func anotherMethodIsNotAllowedOnAnyPath(_ method: String) async {
        for path in ["/health", "/nowhere"] {
            let response = await HTTPServer.answer(request(method, path), routes: routes)
            #expect(response.status == .methodNotAllowed)
            #expect(response.extraHeaders["Allow"] == "GET, HEAD")
        }
    }
}

/// The server on a real socket: what a peer sends, what it gets back, and when it is cut off.
@Suite(.timeLimit(.minutes(1)))
struct HTTPServerTests {
    private static func withServer(
        _ settings: HTTPServer.Settings = HTTPServer.Settings(),
        handler: @escaping @Sendable () async -> HTTPResponse = { HTTPResponse(.ok, body: "fine") },
        _ body: (HTTPServer) async throws -> Void
    ) async throws {
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, routes: [HTTPRoute("/health", handler: handler)], settings: settings,
            logger: Logger(label: "http", level: .critical, sink: InMemoryLogSink()))
        let running = Task { await server.run() }
        do {
            try await body(server)
        } catch {
            running.cancel()
            await running.value
            throw error
        }
        running.cancel()
        await running.value
    }

    @Test func aGetIsAnsweredAndClosed() async throws {
        try await Self.withServer { server in
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: server.port)
            #expect(text?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            #expect(text?.hasSuffix("\r\n\r\nfine") == true)
        }
    }

    @Test func aHeadHasNoBody() async throws {
        try await Self.withServer { server in
            let text = try await HTTPTestClient.exchange(
                Array("HEAD /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: server.port)
            #expect(text?.contains("Content-Length: 4\r\n") == true)
            #expect(text?.hasSuffix("\r\n\r\n") == true)
        }
    }

    @Test func aMalformedRequestIsABadRequest() async throws {
        try await Self.withServer { server in
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\nHost: a\n\n".utf8), port: server.port)
            #expect(text?.hasPrefix("HTTP/1.1 400 Bad Request\r\n") == true)
        }
    }

    /// A body is never read, but the answer must reach a peer still sending one: closing with its
    /// bytes unread would reset the connection, and a reset can discard the answer before it is read.
    @Test func aRequestWithABodyGetsItsAnswerWhateverTheBodysSize() async throws {
        try await Self.withServer { server in
            for size in [10, 300_000, 8_000_000] {
                let head = "POST /health HTTP/1.1\r\nHost: a\r\nContent-Length: \(size)\r\n\r\n"
                // A liveness bound: on a loaded machine, 8 MB through loopback is slow.
                let text = try await HTTPTestClient.exchange(
                    Array(head.utf8) + [UInt8](repeating: 0x61, count: size), port: server.port, timeout: .seconds(60))
                #expect(text?.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n") == true, "a body of \(size) bytes")
            }
        }
    }

    /// The server reads what follows an answer for a while only: a peer that goes on sending is cut off.
    @Test func aPeerThatGoesOnSendingIsCutOffOnceTheLingerEnds() async throws {
        var settings = HTTPServer.Settings()
        settings.lingerTimeout = .milliseconds(300)
        try await Self.withServer(settings) { server in
            let connection = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
            defer { connection.close() }
            try connection.send(Array("POST /health HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n".utf8))
            // Once the server has closed, a send is reset, and the next one fails.
            var cutOff = false
            for _ in 0..<1500 where !cutOff {
                do { try connection.send([0x61]) } catch { cutOff = true }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(cutOff)
        }
    }

    @Test func anOversizeHeadIsClosedUnanswered() async throws {
        try await Self.withServer { server in
            let head = "GET /health HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "v", count: 9000))\r\n\r\n"
            let text = try await HTTPTestClient.exchange(Array(head.utf8), port: server.port)
            #expect(text == "")
        }
    }

    /// The client would wait 30 s: only the server's bound closes it sooner.
    @Test func aHeadNotCompleteWithinTheTimeoutIsClosedUnanswered() async throws {
        var settings = HTTPServer.Settings()
        settings.requestTimeout = .milliseconds(300)
        try await Self.withServer(settings) { server in
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\n".utf8), port: server.port, timeout: .seconds(30))
            #expect(text == "")
        }
    }

    /// The head's bound ends with the head: a page slower than it is still answered.
    @Test func aPageSlowerThanTheHeadsBoundIsAnswered() async throws {
        var settings = HTTPServer.Settings()
        settings.requestTimeout = .milliseconds(100)
        let slowPage: @Sendable () async -> HTTPResponse = {
            try? await Task.sleep(for: .milliseconds(400))
            return HTTPResponse(.ok, body: "slow")
        }
        try await Self.withServer(settings, handler: slowPage) { server in
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: server.port, timeout: .seconds(30))
            #expect(text?.hasSuffix("\r\n\r\nslow") == true)
        }
    }

    @Test func aPageThatTakesLongerThanTheAnswersBoundIsCutOff() async throws {
        var settings = HTTPServer.Settings()
        settings.answerTimeout = .milliseconds(300)
        let hangingPage: @Sendable () async -> HTTPResponse = {
            try? await Task.sleep(for: .seconds(60))
            return HTTPResponse(.ok, body: "too late")
        }
        try await Self.withServer(settings, handler: hangingPage) { server in
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: server.port, timeout: .seconds(30))
            #expect(text == "")
        }
    }

    /// Peers that open connections and send nothing (renewing them as they are cut off) cannot keep a
    /// probe out: past the cap, a new connection takes the place of the oldest one awaiting its head.
    @Test func pastTheConnectionCapANewConnectionTakesTheOldestIdlePlace() async throws {
        var settings = HTTPServer.Settings()
        settings.maxConnections = 2
        // Only the eviction may close the idle ones, however slow a loaded machine runs the test.
        settings.requestLineTimeout = .seconds(30)
        settings.requestTimeout = .seconds(30)
        try await Self.withServer(settings) { server in
            let oldest = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
            try await Task.sleep(for: .milliseconds(100))
            let younger = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
            defer { for connection in [oldest, younger] { connection.close() } }
            try await Task.sleep(for: .milliseconds(200))
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: server.port)
            #expect(text?.hasPrefix("HTTP/1.1 200 OK") == true)
            #expect(await HTTPTestClient.readToEnd(oldest, timeout: .seconds(3)) == "")
            // The younger one kept its place: it is answered when it asks.
            try younger.send(Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            #expect(await HTTPTestClient.readToEnd(younger, timeout: .seconds(3))?.hasPrefix("HTTP/1.1 200 OK") == true)
        }
    }

    /// A connection whose request is being answered keeps its place: with every place answering, a new
    /// connection is closed at once.
    @Test func withEveryPlaceAnsweringANewConnectionIsClosedAtOnce() async throws {
        var settings = HTTPServer.Settings()
        settings.maxConnections = 1
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        let heldPage: @Sendable () async -> HTTPResponse = {
            startedContinuation.yield()
            for await _ in release { break }
            return HTTPResponse(.ok, body: "held")
        }
        try await Self.withServer(settings, handler: heldPage) { server in
            let answering = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
            defer { answering.close() }
            try answering.send(Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            for await _ in started { break }
            let text = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: server.port)
            #expect(text == "")
            releaseContinuation.yield()
            #expect(await HTTPTestClient.readToEnd(answering, timeout: .seconds(10))?.hasSuffix("held") == true)
        }
    }

    /// A peer that has not sent its request line is cut off at the shorter bound; one whose head is
    /// on its way has the whole head's bound.
    @Test func aConnectionWithoutARequestLineIsCutOffSooner() async throws {
        var settings = HTTPServer.Settings()
        settings.requestLineTimeout = .milliseconds(200)
        settings.requestTimeout = .seconds(20)
        try await Self.withServer(settings) { server in
            let silent = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
            let started = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
            defer { for connection in [silent, started] { connection.close() } }
            try started.send(Array("GET /health HTTP/1.1\r\n".utf8))
            #expect(await HTTPTestClient.readToEnd(silent, timeout: .seconds(10)) == "")
            try started.send(Array("Host: a\r\n\r\n".utf8))
            #expect(
                await HTTPTestClient.readToEnd(started, timeout: .seconds(10))?.hasPrefix("HTTP/1.1 200 OK") == true)
        }
    }

    @Test func stoppingClosesTheListenerAndOpenConnections() async throws {
        let server = try HTTPServer(
            host: "127.0.0.1", port: 0, routes: [],
            logger: Logger(label: "http", level: .critical, sink: InMemoryLogSink()))
        let running = Task { await server.run() }
        let idle = try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
        try await Task.sleep(for: .milliseconds(100))
        running.cancel()
        await running.value
        #expect(await HTTPTestClient.readToEnd(idle, timeout: .seconds(5)) == "")
        await #expect(throws: (any Error).self) {
            try await TCPConnection.connect(host: "127.0.0.1", port: server.port)
        }
    }
}
