/// A key every instance of one component derives from the secret they all hold (the XEP-0114 secret),
/// for one use: the label keeps each use's key apart from every other use of the secret, and the key
/// reveals nothing of the secret. It authenticates messages with HMAC-SHA256.
public struct SharedKey: Sendable, CustomStringConvertible {
    public static let macLength = 32

    let bytes: [UInt8]

    /// HMAC-SHA256(secret, label).
    public init(secret: String, label: String) {
        bytes = Sodium.hmacSHA256(key: Array(secret.utf8), Array(label.utf8))
    }

    public func mac(_ message: [UInt8]) -> [UInt8] {
        Sodium.hmacSHA256(key: bytes, message)
    }

    /// Whether `mac` is the message's, compared in constant time: a forger learns nothing from the time.
    public func authenticates(_ mac: [UInt8], of message: [UInt8]) -> Bool {
        mac.count == Self.macLength && Sodium.constantTimeEqual(mac, self.mac(message))
    }

    /// The key padded to SHA-256's block and XORed with HMAC's inner and outer pads (RFC 2104), for a
    /// signer that has SHA-256 but no HMAC (PostgreSQL's `sha256()`):
    /// HMAC(m) = SHA-256(outer ‖ SHA-256(inner ‖ m)).
    public var hmacPads: (inner: [UInt8], outer: [UInt8]) {
        let block = bytes + [UInt8](repeating: 0, count: 64 - bytes.count)
        return (block.map { $0 ^ 0x36 }, block.map { $0 ^ 0x5c })
    }

    /// A fingerprint, so that printing a key by accident does not leak it.
    public var description: String { "SharedKey(\(Fingerprint.of(bytes)))" }
}
