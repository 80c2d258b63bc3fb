import Testing

@testable import HTTPServer

@Suite struct HTTPResponseTests {
    @Test func anAnswerHasItsLengthAndClosesTheConnection() {
        let response = HTTPResponse(.ok, contentType: "application/json", body: "{\"a\":1}")
        #expect(
            String(decoding: response.serialized(), as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
                + "Cache-Control: no-store\r\nConnection: close\r\n\r\n{\"a\":1}")
    }

    @Test func aHeadAnswerHasTheLengthAndNoBody() {
        let text = String(decoding: HTTPResponse(.ok, body: "hello").serialized(withBody: false), as: UTF8.self)
        #expect(text.hasSuffix("Content-Length: 5\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"))
    }

    @Test func a405NamesTheMethodsAllowed() {
        let text = String(
            decoding: HTTPResponse.plain(.methodNotAllowed, extraHeaders: ["Allow": "GET, HEAD"]).serialized(),
            as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        #expect(text.contains("\r\nAllow: GET, HEAD\r\n"))
        #expect(text.hasSuffix("\r\n\r\n405 Method Not Allowed\n"))
    }
}
