/// The per-registration key of the collapse tag (docs/wire-contract.md, Output): the tag groups one account's
/// chat on one registration and means nothing to Apple or Google.
public struct CollapseKey: Sendable, Equatable, CustomStringConvertible {
    public static let length = 32

    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(SealingError) {
        guard bytes.count == Self.length else { throw .invalidCollapseKey }
        self.bytes = bytes
    }

    public static func random() -> CollapseKey {
        CollapseKey(checkedBytes: Sodium.randomBytes(length))
    }

    private init(checkedBytes: [UInt8]) {
        self.bytes = checkedBytes
    }

    /// base64url-nopad(HMAC-SHA256(K, utf8(account) || 0x00 || utf8(chat))): 43 characters.
    public func tag(account: String, chat: String) -> String {
        Base64.encodeURLNoPad(Sodium.hmacSHA256(key: bytes, Array(account.utf8), [0x00], Array(chat.utf8)))
    }

    /// Constant time: the key is a secret.
    public static func == (lhs: CollapseKey, rhs: CollapseKey) -> Bool {
        Sodium.constantTimeEqual(lhs.bytes, rhs.bytes)
    }

    /// A fingerprint, so that printing a key by accident does not leak it.
    public var description: String { "CollapseKey(\(Fingerprint.of(bytes)))" }
}
