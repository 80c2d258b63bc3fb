import Foundation

/// An XMPP address (RFC 7622): `[localpart@]domainpart[/resourcepart]`, held in prepared form.
///
/// Each part is prepared as Prosody 0.12 and ejabberd 23.01 prepare it (`Stringprep`): nodeprep for
/// the localpart, nameprep for the domainpart, resourceprep for the resourcepart; so two JIDs are
/// equal when the servers would route them to the same place (`STRASSE@Example.COM.` equals
/// `straße@example.com`). A trailing dot of the domainpart is dropped, domain labels are letters,
/// digits, hyphens (and underscores, which deployed component names use), and IP literals
/// (`127.0.0.1`, `[::1]`) are accepted. A prohibited character is refused, naming it.
public struct JID: Sendable, Hashable, Codable, CustomStringConvertible {
    public let localpart: String?
    public let domainpart: String
    public let resourcepart: String?

    /// RFC 7622 §3.1: each part is at most 1023 octets once prepared.
    public static let maximumPartLength = 1023

    public init(_ string: String) throws(JIDError) {
        // RFC 7622 §3.2: the first "/" starts the resourcepart (which may itself contain "/" and "@"),
        // and the first "@" before it ends the localpart. Split on scalars, as servers split on bytes:
        // as Characters, "/" or "@" after a prepend character (U+0D4E) would fuse with it and hide.
        var rest = Substring(string).unicodeScalars
        var resource: Substring.UnicodeScalarView?
        if let slash = rest.firstIndex(of: "/") {
            resource = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var local: Substring.UnicodeScalarView?
        if let at = rest.firstIndex(of: "@") {
            local = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        try self.init(
            localpart: local.map { String($0) }, domainpart: String(rest),
            resourcepart: resource.map { String($0) })
    }

    /// Builds a JID from its parts; `nil` means the part is absent, an empty string is an error.
    public init(localpart: String? = nil, domainpart: String, resourcepart: String? = nil) throws(JIDError) {
        self.localpart = try localpart.map { part throws(JIDError) in try Self.prepareLocalpart(part) }
        self.domainpart = try Self.prepareDomainpart(domainpart)
        self.resourcepart = try resourcepart.map { part throws(JIDError) in try Self.prepareResourcepart(part) }
    }

    /// The JID without its resourcepart.
    public var bare: JID {
        guard resourcepart != nil else { return self }
        return JID(trustedLocalpart: localpart, domainpart: domainpart, resourcepart: nil)
    }

    public var isBare: Bool { resourcepart == nil }

    /// A server or component address: no localpart and no resourcepart.
    public var isDomainOnly: Bool { localpart == nil && resourcepart == nil }

    /// The canonical string form.
    public var description: String {
        var result = ""
        if let localpart { result += localpart + "@" }
        result += domainpart
        if let resourcepart { result += "/" + resourcepart }
        return result
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        do {
            try self.init(string)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    private init(trustedLocalpart: String?, domainpart: String, resourcepart: String?) {
        self.localpart = trustedLocalpart
        self.domainpart = domainpart
        self.resourcepart = resourcepart
    }
}

extension JID {
    private static func prepared(_ raw: String, _ profile: Stringprep.Profile, _ part: JIDError.Part)
        throws(JIDError) -> String
    {
        do {
            return try Stringprep.prepare(raw, profile)
        } catch {
            switch error {
            case .prohibited(let scalar): throw .forbiddenCharacter(part: part, scalar)
            case .bidi: throw .mixedDirection(part: part)
            }
        }
    }

    private static func prepareLocalpart(_ raw: String) throws(JIDError) -> String {
        let part = try prepared(raw, .nodeprep, .localpart)
        guard !part.isEmpty else { throw .emptyLocalpart }
        try checkLength(part, .localpart)
        return part
    }

    private static func prepareDomainpart(_ raw: String) throws(JIDError) -> String {
        var part = try prepared(raw, .nameprep, .domainpart)
        // RFC 7622 §3.2: a trailing dot is not part of the domainpart (but a lone "." is not a domain).
        if part.count > 1, part.hasSuffix(".") { part.removeLast() }
        guard !part.isEmpty else { throw .emptyDomainpart }
        try checkLength(part, .domainpart)
        if part.hasPrefix("[") {
            guard isIPv6Literal(part) else { throw .invalidDomainpart(part) }
            return part
        }
        // Labels as IDNA U-labels: letters, digits, hyphens, and any non-ASCII letter. Underscores are
        // tolerated because deployed component names use them and servers accept them.
        for label in part.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, !label.hasPrefix("-"), !label.hasSuffix("-") else {
                throw .invalidDomainpart(part)
            }
            for scalar in label.unicodeScalars {
                if scalar.isASCII {
                    // Ranges, not `properties.isAlphabetic`: a Unicode table lookup per character.
                    guard
                        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                            || scalar == "-" || scalar == "_"
                    else { throw .forbiddenCharacter(part: .domainpart, scalar) }
                } else if isSpaceOrControl(scalar) {
                    throw .forbiddenCharacter(part: .domainpart, scalar)
                }
            }
        }
        return part
    }

    /// Case kept, ASCII spaces allowed.
    private static func prepareResourcepart(_ raw: String) throws(JIDError) -> String {
        let part = try prepared(raw, .resourceprep, .resourcepart)
        guard !part.isEmpty else { throw .emptyResourcepart }
        try checkLength(part, .resourcepart)
        return part
    }

    private static func checkLength(_ part: String, _ which: JIDError.Part) throws(JIDError) {
        if part.utf8.count > maximumPartLength { throw .tooLong(part: which, bytes: part.utf8.count) }
    }

    private static func isSpaceOrControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .spaceSeparator, .lineSeparator, .paragraphSeparator, .format: true
        default: scalar.properties.isWhitespace
        }
    }

    private static func isIPv6Literal(_ part: String) -> Bool {
        guard part.hasSuffix("]"), part.count > 2 else { return false }
        let inner = part.dropFirst().dropLast()
        let allowed = inner.unicodeScalars.allSatisfy { $0.properties.isASCIIHexDigit || $0 == ":" || $0 == "." }
        return allowed && inner.contains(":")
    }
}

/// Why a string is not a valid JID.
public enum JIDError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Part: String, Sendable, Hashable {
        case localpart, domainpart, resourcepart
    }

    /// `@example.com`: an "@" with nothing before it.
    case emptyLocalpart
    case emptyDomainpart
    /// `user@example.com/`: a "/" with nothing after it.
    case emptyResourcepart
    case tooLong(part: Part, bytes: Int)
    case forbiddenCharacter(part: Part, Unicode.Scalar)
    /// Not a DNS name nor an IP literal (empty label, label starting with "-", unbalanced "[").
    case invalidDomainpart(String)
    /// Right-to-left text mixed with left-to-right, or not starting and ending with it (RFC 3454 §6).
    case mixedDirection(part: Part)

    public var description: String {
        switch self {
        case .emptyLocalpart: "the localpart before '@' is empty"
        case .emptyDomainpart: "the domainpart is empty"
        case .emptyResourcepart: "the resourcepart after '/' is empty"
        case .tooLong(let part, let bytes): "the \(part.rawValue) is \(bytes) bytes long, over 1023"
        case .forbiddenCharacter(let part, let scalar):
            "the \(part.rawValue) contains the forbidden character U+\(String(scalar.value, radix: 16, uppercase: true))"
        case .invalidDomainpart(let domain): "'\(domain)' is not a domain name or IP literal"
        case .mixedDirection(let part):
            "the \(part.rawValue) mixes right-to-left and left-to-right text, or does not start and end with right-to-left"
        }
    }
}
