/// The statuses this server answers with.
public struct HTTPStatus: Sendable, Equatable {
    public let code: Int
    public let reason: String

    public static let ok = HTTPStatus(code: 200, reason: "OK")
    public static let badRequest = HTTPStatus(code: 400, reason: "Bad Request")
    public static let notFound = HTTPStatus(code: 404, reason: "Not Found")
    public static let methodNotAllowed = HTTPStatus(code: 405, reason: "Method Not Allowed")
    public static let requestHeaderFieldsTooLarge = HTTPStatus(code: 431, reason: "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(code: 500, reason: "Internal Server Error")
    public static let serviceUnavailable = HTTPStatus(code: 503, reason: "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(code: 505, reason: "HTTP Version Not Supported")
}

/// One answer; always the last on its connection (`Connection: close`).
public struct HTTPResponse: Sendable, Equatable {
    public var status: HTTPStatus
    public var contentType: String
    public var body: [UInt8]
    /// Fields beyond the ones every answer has (`Allow` on a 405, say).
    public var extraHeaders: [String: String]

    public init(
        _ status: HTTPStatus, contentType: String = "text/plain; charset=utf-8", body: String,
        extraHeaders: [String: String] = [:]
    ) {
        self.status = status
        self.contentType = contentType
        self.body = Array(body.utf8)
        self.extraHeaders = extraHeaders
    }

    /// A short plain-text answer that names its status.
    public static func plain(_ status: HTTPStatus, extraHeaders: [String: String] = [:]) -> HTTPResponse {
        HTTPResponse(status, body: "\(status.code) \(status.reason)\n", extraHeaders: extraHeaders)
    }

    /// The bytes on the wire. A HEAD's answer has the fields of the GET's, Content-Length included,
    /// and no body (RFC 9110 §9.3.2).
    public func serialized(withBody: Bool = true) -> [UInt8] {
        var head = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "Content-Length: \(body.count)\r\n"
        head += "Cache-Control: no-store\r\n"
        for (name, value) in extraHeaders.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (withBody ? body : [])
    }
}
