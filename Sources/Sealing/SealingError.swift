/// Why sealing, opening or a key operation was refused. The cases never carry key material.
public enum SealingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A recipient or peer public key that is not 32 bytes.
    case invalidPublicKey
    /// A private key (recipient or ephemeral) that is not 32 bytes.
    case invalidPrivateKey
    /// The plaintext's byte count, over ``Envelope/maxPlaintextLength``.
    case plaintextTooLarge(Int)
    /// X25519 gave an all-zero shared secret: the peer key is of low order.
    case allZeroSharedSecret
    /// Not strict standard base64, or too short to hold `enc` and the tag.
    case malformedEnvelope
    /// More than ``Envelope/maxEncodedLength`` characters.
    case envelopeTooLarge
    /// The AEAD tag did not verify: wrong key, label or aad, or a tampered envelope.
    case openFailed
    /// A collapse key that is not 32 bytes.
    case invalidCollapseKey

    public var description: String {
        switch self {
        case .invalidPublicKey: "public key is not 32 bytes"
        case .invalidPrivateKey: "private key is not 32 bytes"
        case .plaintextTooLarge(let count): "plaintext is \(count) bytes, more than \(Envelope.maxPlaintextLength)"
        case .allZeroSharedSecret: "X25519 shared secret is all zero (low-order public key)"
        case .malformedEnvelope: "envelope is not strict standard base64 of at least 48 bytes"
        case .envelopeTooLarge: "envelope is longer than \(Envelope.maxEncodedLength) characters"
        case .openFailed: "envelope did not authenticate"
        case .invalidCollapseKey: "collapse key is not 32 bytes"
        }
    }
}
