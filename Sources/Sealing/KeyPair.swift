import CSodium

/// An X25519 key pair: what a device holds to open envelopes, and what a seal makes for each
/// envelope as its ephemeral key.
public struct KeyPair: Sendable {
    public static let keyLength = 32

    public let publicKey: [UInt8]
    public let privateKey: [UInt8]

    public static func generate() -> KeyPair {
        // Any 32 bytes are a valid X25519 private key: the scalar is clamped when it is used.
        KeyPair(checkedPrivateKey: Sodium.randomBytes(keyLength))
    }

    /// Derives the public key; refuses a private key that is not 32 bytes.
    public init(privateKey: [UInt8]) throws(SealingError) {
        guard privateKey.count == Self.keyLength else { throw .invalidPrivateKey }
        self.init(checkedPrivateKey: privateKey)
    }

    private init(checkedPrivateKey privateKey: [UInt8]) {
        self.publicKey = X25519.publicKey(privateKey: privateKey)
        self.privateKey = privateKey
    }
}

/// The two X25519 operations, over libsodium's `crypto_scalarmult`.
enum X25519 {
    /// The caller has checked `privateKey` is 32 bytes.
    static func publicKey(privateKey: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_scalarmult_bytes()))
        let status = publicKey.withSodiumMutablePointer { out in
            privateKey.withSodiumPointer { crypto_scalarmult_base(out, $0) }
        }
        precondition(status == 0, "crypto_scalarmult_base failed")
        return publicKey
    }

    /// The raw DH output. libsodium already refuses an all-zero result; it is checked here as
    /// well because RFC 9180 §7.1.4 makes that check the caller's duty.
    static func sharedSecret(privateKey: [UInt8], publicKey: [UInt8]) throws(SealingError) -> [UInt8] {
        guard privateKey.count == KeyPair.keyLength else { throw .invalidPrivateKey }
        guard publicKey.count == KeyPair.keyLength else { throw .invalidPublicKey }
        Sodium.ensureInitialized()
        var secret = [UInt8](repeating: 0, count: Int(crypto_scalarmult_bytes()))
        let status = secret.withSodiumMutablePointer { out in
            privateKey.withSodiumPointer { scalar in
                publicKey.withSodiumPointer { crypto_scalarmult(out, scalar, $0) }
            }
        }
        guard status == 0, !Sodium.isZero(secret) else {
            Sodium.zeroize(&secret)
            throw .allZeroSharedSecret
        }
        return secret
    }
}

extension KeyPair: CustomStringConvertible {
    /// Never the private key: printing a pair by accident must not leak it.
    public var description: String { "KeyPair(public: \(Fingerprint.of(publicKey)))" }
}
