/// The head of an HTTP/1.x request (RFC 9112), read strictly: what is not plainly valid is refused,
/// never guessed at. The body, if any, is never read: every answer closes the connection.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path of the origin-form target, without its query.
    public var path: String
    public var version: Version
    /// Field names lowercased, values without the surrounding whitespace, in the order received.
    public var headers: [(name: String, value: String)]

    public enum Version: String, Sendable {
        case http10 = "HTTP/1.0"
        case http11 = "HTTP/1.1"
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.version == rhs.version
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    public func header(_ name: String) -> [String] {
        headers.filter { $0.name == name }.map(\.value)
    }

    /// What reading a request head can end in, short of the request itself.
    public enum Refusal: Error, Sendable, Equatable {
        /// The head does not fit in the limit: the connection is closed without an answer.
        case tooLarge
        /// Answered with this status and closed: 400, 431 (too many fields) or 505.
        case status(HTTPStatus)
    }

    /// The limits of one request head.
    public struct Limits: Sendable {
        /// The request line and every field, with their line ends and the empty line.
        public var maxHeadBytes = 8192
        public var maxHeaderFields = 64

        public init() {}
    }

    /// Parses one complete head (the bytes up to and including the empty line that ends it).
    public static func parse(head: ArraySlice<UInt8>, limits: Limits = Limits()) throws(Refusal) -> HTTPRequest {
        guard head.count <= limits.maxHeadBytes else { throw .tooLarge }
        var lines = try Self.lines(head)
        guard !lines.isEmpty else { throw .status(.badRequest) }
        let (method, path, version) = try requestLine(lines.removeFirst())
        guard lines.count <= limits.maxHeaderFields else { throw .status(.requestHeaderFieldsTooLarge) }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count)
        for line in lines { headers.append(try field(line)) }
        let request = HTTPRequest(method: method, path: path, version: version, headers: headers)
        // RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host.
        if version == .http11 && request.header("host").count != 1 { throw .status(.badRequest) }
        return request
    }

    /// The lines of a head ended by CRLF CRLF, each without its CRLF; a bare CR or LF is refused.
    private static func lines(_ head: ArraySlice<UInt8>) throws(Refusal) -> [ArraySlice<UInt8>] {
        guard head.count >= 4, head.suffix(4).elementsEqual(Self.headEnd) else { throw .status(.badRequest) }
        var lines: [ArraySlice<UInt8>] = []
        var start = head.startIndex
        var index = head.startIndex
        let end = head.endIndex - 2  // the final CRLF ends the empty line
        while index < end {
            switch head[index] {
            case cr:
                guard index + 1 < head.endIndex, head[index + 1] == lf else { throw .status(.badRequest) }
                lines.append(head[start..<index])
                index += 2
                start = index
            case lf:
                throw .status(.badRequest)
            default:
                index += 1
            }
        }
        return lines
    }

    private static func requestLine(_ line: ArraySlice<UInt8>) throws(Refusal) -> (String, String, Version) {
        let parts = line.split(separator: space, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            throw .status(.badRequest)
        }
        let target = parts[1]
        // Origin-form only: a path of visible ASCII. Absolute-form is for proxies, `*` for OPTIONS.
        guard target.first == slash, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .status(.badRequest)
        }
        let path = target.split(separator: question, maxSplits: 1, omittingEmptySubsequences: false)[0]
        let versionText = String(decoding: parts[2], as: UTF8.self)
        guard let version = Version(rawValue: versionText) else {
            throw .status(Self.isVersionSyntax(parts[2]) ? .httpVersionNotSupported : .badRequest)
        }
        return (String(decoding: parts[0], as: UTF8.self), String(decoding: path, as: UTF8.self), version)
    }

    /// `HTTP/d.d`: a version, if not one served.
    private static func isVersionSyntax(_ text: ArraySlice<UInt8>) -> Bool {
        text.count == 8 && text.prefix(5).elementsEqual("HTTP/".utf8) && isDigit(text[text.startIndex + 5])
            && text[text.startIndex + 6] == UInt8(ascii: ".") && isDigit(text[text.startIndex + 7])
    }

    /// `name ":" OWS value OWS`, the name a token with no space before the colon, the value visible
    /// ASCII, spaces and tabs (obs-text, bytes over 0x7F, is refused: no page reads a value that needs
    /// it); a line folded onto the previous one (obs-fold) is refused (RFC 9112 §5.2).
    private static func field(_ line: ArraySlice<UInt8>) throws(Refusal) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .status(.badRequest) }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { throw .status(.badRequest) }
        var value = line[(colon + 1)...]
        while let first = value.first, isBlank(first) { value = value.dropFirst() }
        while let last = value.last, isBlank(last) { value = value.dropLast() }
        guard value.allSatisfy({ $0 == tab || ($0 >= 0x20 && $0 < 0x7F) }) else { throw .status(.badRequest) }
        return (String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self))
    }

    static let headEnd: [UInt8] = [cr, lf, cr, lf]
}

/// RFC 9110 §5.6.2 tchar.
private func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        true
    default:
        "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
private func isBlank(_ byte: UInt8) -> Bool { byte == space || byte == tab }

private let cr = UInt8(ascii: "\r")
private let lf = UInt8(ascii: "\n")
private let space = UInt8(ascii: " ")
private let tab = UInt8(ascii: "\t")
private let slash = UInt8(ascii: "/")
private let question = UInt8(ascii: "?")

/// Collects the bytes of one request until its head is complete, refusing a head over the limit as
/// soon as it is over (a peer cannot make it buffer more).
public struct HTTPRequestReader: Sendable {
    private var buffer: [UInt8] = []
    private let limits: HTTPRequest.Limits

    public init(limits: HTTPRequest.Limits = HTTPRequest.Limits()) {
        self.limits = limits
    }

    /// nil while the head is incomplete; then the request, or why it is refused. A line ended by a
    /// bare LF is refused as soon as it arrives, not left to wait for a CRLF CRLF that never comes.
    public mutating func read(_ chunk: some Collection<UInt8>) -> Result<HTTPRequest, HTTPRequest.Refusal>? {
        let searchFrom = buffer.count
        buffer.append(contentsOf: chunk.prefix(limits.maxHeadBytes + 1 - buffer.count))
        var index = searchFrom
        while index < buffer.count {
            if buffer[index] == lf {
                guard index > 0, buffer[index - 1] == cr else { return .failure(.status(.badRequest)) }
                if index >= 3, buffer[index - 2] == lf, buffer[index - 3] == cr {
                    return Result { () throws(HTTPRequest.Refusal) in
                        try HTTPRequest.parse(head: buffer[...index], limits: limits)
                    }
                }
            }
            index += 1
        }
        return buffer.count > limits.maxHeadBytes ? .failure(.tooLarge) : nil
    }
}
