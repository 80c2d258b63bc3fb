/// The apush-v2 sealed envelope (docs/wire-contract.md, Output): standard base64 of `enc` (32 bytes) followed by
/// the ChaCha20-Poly1305 ciphertext and tag, sealed with HPKE mode_base to the device's X25519 key,
/// `info` = "apush-v2", empty aad.
public enum Envelope {
    /// The HPKE `info`: the version of the format, authenticated by every envelope.
    public static let label = "apush-v2"
    /// The App Server's limit on the base64 text.
    public static let maxEncodedLength = 3072
    /// The largest plaintext whose envelope fits ``maxEncodedLength``.
    public static let maxPlaintextLength = maxEncodedLength / 4 * 3 - overhead
    /// `enc` and the AEAD tag.
    public static let overhead = HPKE.encapsulatedKeyLength + HPKE.tagLength

    private static let info = Array(label.utf8)

    /// Seals `plaintext` to `recipientPublicKey` with a fresh ephemeral key.
    public static func seal(
        _ plaintext: some Collection<UInt8>,
        to recipientPublicKey: [UInt8]
    ) throws(SealingError) -> String {
        var ephemeralPrivateKey = Sodium.randomBytes(KeyPair.keyLength)
        defer { Sodium.zeroize(&ephemeralPrivateKey) }
        return try seal(plaintext, to: recipientPublicKey, ephemeralPrivateKey: ephemeralPrivateKey)
    }

    /// Seals `plaintext` to `recipientPublicKey` with an ephemeral key from `pool`, made ahead of need.
    public static func seal(
        _ plaintext: some Collection<UInt8>, to recipientPublicKey: [UInt8],
        keys pool: EphemeralKeyPool
    ) throws(SealingError) -> String {
        var key = pool.take()
        defer { Sodium.zeroize(&key.privateKey) }
        return try seal(
            plaintext, to: recipientPublicKey, ephemeralPrivateKey: key.privateKey,
            ephemeralPublicKey: key.publicKey)
    }

    /// Seals with the given ephemeral private key. Only for reproducing test vectors: reusing an
    /// ephemeral key across envelopes reuses the AEAD key and nonce, which breaks confidentiality.
    public static func seal(
        _ plaintext: some Collection<UInt8>, to recipientPublicKey: [UInt8],
        ephemeralPrivateKey: [UInt8]
    ) throws(SealingError) -> String {
        guard ephemeralPrivateKey.count == KeyPair.keyLength else { throw .invalidPrivateKey }
        return try seal(
            plaintext, to: recipientPublicKey, ephemeralPrivateKey: ephemeralPrivateKey,
            ephemeralPublicKey: X25519.publicKey(privateKey: ephemeralPrivateKey))
    }

    /// The caller has checked the ephemeral private key is 32 bytes, and `ephemeralPublicKey` is its own.
    private static func seal(
        _ plaintext: some Collection<UInt8>, to recipientPublicKey: [UInt8],
        ephemeralPrivateKey: [UInt8], ephemeralPublicKey: [UInt8]
    ) throws(SealingError) -> String {
        guard recipientPublicKey.count == KeyPair.keyLength else { throw .invalidPublicKey }
        let message = Array(plaintext)
        guard message.count <= maxPlaintextLength else { throw .plaintextTooLarge(message.count) }

        let context = try HPKE.setUpSender(
            recipientPublicKey: recipientPublicKey, ephemeralPrivateKey: ephemeralPrivateKey,
            enc: ephemeralPublicKey, info: info)
        return Base64.encode(ephemeralPublicKey + HPKE.seal(message, context: context))
    }

    /// Opens an envelope with the recipient's private key. Strict: only canonical standard base64
    /// with padding and no whitespace, at most ``maxEncodedLength`` characters, no low-order `enc`.
    public static func open(_ envelope: String, privateKey: [UInt8]) throws(SealingError) -> [UInt8] {
        guard privateKey.count == KeyPair.keyLength else { throw .invalidPrivateKey }
        guard envelope.utf8.count <= maxEncodedLength else { throw .envelopeTooLarge }
        guard let raw = Base64.decode(envelope), raw.count >= overhead else { throw .malformedEnvelope }

        let enc = Array(raw.prefix(HPKE.encapsulatedKeyLength))
        let context = try HPKE.setUpRecipient(enc: enc, recipientPrivateKey: privateKey, info: info)
        return try HPKE.open(Array(raw.dropFirst(HPKE.encapsulatedKeyLength)), context: context)
    }
}
