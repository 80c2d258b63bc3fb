import Testing

@testable import HTTPServer

@Suite struct HTTPRequestTests {
    private func parse(_ text: String, limits: HTTPRequest.Limits = HTTPRequest.Limits()) throws(HTTPRequest.Refusal)
        -> HTTPRequest
    {
        try HTTPRequest.parse(head: Array(text.utf8)[...], limits: limits)
    }

    private func refusal(_ text: String, limits: HTTPRequest.Limits = HTTPRequest.Limits()) -> HTTPRequest.Refusal? {
        do {
            _ = try parse(text, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func aPlainGetIsRead() throws {
        let request = try parse("GET /metrics?x=1 HTTP/1.1\r\nHost: localhost:9347\r\nAccept:  text/plain \r\n\r\n")
        #expect(request.method == "GET")
        #expect(request.path == "/metrics")
        #expect(request.version == .http11)
        #expect(request.header("host") == ["localhost:9347"])
        #expect(request.header("accept") == ["text/plain"])
    }

    @Test func anHTTP10RequestNeedsNoHost() throws {
        #expect(try parse("HEAD /health HTTP/1.0\r\n\r\n").path == "/health")
    }

    @Test(arguments: [
        "GET /health HTTP/1.1\r\n\r\n",  // no Host
        "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",  // two
        "GET  /health HTTP/1.1\r\nHost: a\r\n\r\n",  // two spaces
        "GET /health  HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /health HTTP/1.1 \r\nHost: a\r\n\r\n",
        "GET /health\r\nHost: a\r\n\r\n",  // HTTP/0.9 style
        "GET http://host/health HTTP/1.1\r\nHost: a\r\n\r\n",  // absolute-form
        "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /he\u{7F}alth HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /héalth HTTP/1.1\r\nHost: a\r\n\r\n",
        "G(T /health HTTP/1.1\r\nHost: a\r\n\r\n",  // not a token
        " GET /health HTTP/1.1\r\nHost: a\r\n\r\n",
        "\r\nGET /health HTTP/1.1\r\nHost: a\r\n\r\n",  // a leading empty line
        "GET /health HTTP/1.1\nHost: a\r\n\r\n",  // a bare LF
        "GET /health HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",  // a bare CR
        "GET /health HTTP/1.1\r\nHost : a\r\n\r\n",  // space before the colon
        "GET /health HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",  // obs-fold
        "GET /health HTTP/1.1\r\nHost a\r\n\r\n",  // no colon
        "GET /health HTTP/1.1\r\n: a\r\nHost: a\r\n\r\n",  // no name
        "GET /health HTTP/1.1\r\nHost: a\u{1}b\r\n\r\n",  // a control character
        "GET /health HTTP/1.1\r\nHost: a\r\nX: caf\u{E9}\r\n\r\n",  // obs-text
        "GET /health http/1.1\r\nHost: a\r\n\r\n",
        "GET /health HTTP/1.1\r\nHost: a\r\n\n",
    ])
    func aMalformedHeadIsABadRequest(_ text: String) {
        #expect(refusal(text) == .status(.badRequest))
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/1.2", "HTTP/0.9"])
    func anotherVersionIsNotSupported(_ version: String) {
        #expect(refusal("GET / \(version)\r\nHost: a\r\n\r\n") == .status(.httpVersionNotSupported))
    }

    @Test func tooManyFieldsAreRefusedWith431() {
        var limits = HTTPRequest.Limits()
        limits.maxHeaderFields = 3
        let fields = (0..<3).map { "X-\($0): v\r\n" }.joined()
        #expect(refusal("GET / HTTP/1.0\r\n\(fields)\r\n", limits: limits) == nil)
        #expect(
            refusal("GET / HTTP/1.0\r\n\(fields)X-3: v\r\n\r\n", limits: limits)
                == .status(.requestHeaderFieldsTooLarge))
    }

    @Test func aHeadOverTheLimitIsTooLarge() {
        var limits = HTTPRequest.Limits()
        limits.maxHeadBytes = 64
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "v", count: 40))\r\n\r\n"
        #expect(refusal(head, limits: limits) == .tooLarge)
    }

    /// Any method that is a token is read: the server, not the parser, answers 405.
    @Test func anyTokenMethodIsRead() throws {
        #expect(try parse("BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n").method == "BREW")
    }
}

@Suite struct HTTPRequestReaderTests {
    @Test func aHeadSplitAcrossChunksAnywhereIsRead() throws {
        let bytes = Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        for split in 1..<bytes.count {
            var reader = HTTPRequestReader()
            #expect(reader.read(bytes[..<split]) == nil)
            let request = try #require(try reader.read(bytes[split...])?.get())
            #expect(request.path == "/health")
        }
    }

    @Test func aHeadOneByteAtATimeIsRead() throws {
        var reader = HTTPRequestReader()
        var outcome: Result<HTTPRequest, HTTPRequest.Refusal>?
        for byte in "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n".utf8 {
            #expect(outcome == nil)
            outcome = reader.read([byte])
        }
        #expect(try outcome?.get().path == "/metrics")
    }

    @Test func bytesPastTheLimitWithoutAnEndAreRefusedAtOnce() {
        var reader = HTTPRequestReader()
        #expect(reader.read(Array(repeating: UInt8(ascii: "a"), count: 8192)) == nil)
        #expect(reader.read([UInt8(ascii: "a")]) == .failure(.tooLarge))
    }

    @Test func aHeadEndingJustPastTheLimitIsTooLarge() {
        var limits = HTTPRequest.Limits()
        limits.maxHeadBytes = 40
        var reader = HTTPRequestReader(limits: limits)
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "v", count: 9))\r\n\r\n"
        #expect(head.utf8.count == 41)
        #expect(reader.read(Array(head.utf8)) == .failure(.tooLarge))
    }

    @Test func aHeadAtTheLimitIsRead() throws {
        var limits = HTTPRequest.Limits()
        limits.maxHeadBytes = 40
        var reader = HTTPRequestReader(limits: limits)
        let head = "GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "v", count: 8))\r\n\r\n"
        #expect(head.utf8.count == 40)
        #expect(try reader.read(Array(head.utf8))?.get().path == "/")
    }

    /// A body (or a pipelined request) after the head is not read: the answer closes the connection.
    @Test func bytesAfterTheHeadAreIgnored() throws {
        var reader = HTTPRequestReader()
        let outcome = reader.read(Array("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /other HTTP/1.1\r\n".utf8))
        #expect(try outcome?.get().path == "/")
    }
}

extension HTTPRequestReaderTests {
    /// A peer ending lines with LF alone would otherwise wait out the timeout for a CRLF CRLF.
    @Test func aBareLineFeedIsRefusedAsSoonAsItArrives() {
        var reader = HTTPRequestReader()
        #expect(reader.read(Array("GET / HTTP/1.1".utf8)) == nil)
        #expect(reader.read(Array("\n".utf8)) == .failure(.status(.badRequest)))
    }
}
