import CSodium

/// RFC 9180 mode_base, single shot, for the one suite apush-v2 uses:
/// DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305 (0x0020 / 0x0001 / 0x0003).
/// Every intermediate secret is zeroised before returning; a ``Context`` zeroises its own.
enum HPKE {
    static let encapsulatedKeyLength = 32
    static let tagLength = 16

    private static let version = Array("HPKE-v1".utf8)
    private static let kemSuite = Array("KEM".utf8) + [0x00, 0x20]
    private static let hpkeSuite = Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x03]

    /// The AEAD key and base nonce of a context, plus the KEM shared secret they came from
    /// (kept so tests can check each step against the vectors' intermediates). A class, so that
    /// no copy of the arrays outlives it: it zeroises them when the last reference goes.
    final class Context {
        private(set) var sharedSecret: [UInt8]
        private(set) var key: [UInt8]
        private(set) var baseNonce: [UInt8]

        init(sharedSecret: [UInt8], key: [UInt8], baseNonce: [UInt8]) {
            self.sharedSecret = sharedSecret
            self.key = key
            self.baseNonce = baseNonce
        }

        deinit { zeroize() }

        func zeroize() {
            Sodium.zeroize(&sharedSecret)
            Sodium.zeroize(&key)
            Sodium.zeroize(&baseNonce)
        }
    }

    // MARK: KEM (RFC 9180 §4.1)

    /// Encap with a given ephemeral key, whose public half `enc` the caller computed: the context for `info`.
    static func setUpSender(
        recipientPublicKey: [UInt8], ephemeralPrivateKey: [UInt8], enc: [UInt8],
        info: [UInt8]
    ) throws(SealingError) -> Context {
        var dh = try X25519.sharedSecret(privateKey: ephemeralPrivateKey, publicKey: recipientPublicKey)
        defer { Sodium.zeroize(&dh) }
        return keySchedule(dh: dh, enc: enc, recipientPublicKey: recipientPublicKey, info: info)
    }

    /// Decap: the context a recipient derives from `enc` and its private key.
    static func setUpRecipient(
        enc: [UInt8], recipientPrivateKey: [UInt8],
        info: [UInt8]
    ) throws(SealingError) -> Context {
        var dh = try X25519.sharedSecret(privateKey: recipientPrivateKey, publicKey: enc)
        defer { Sodium.zeroize(&dh) }
        let recipientPublicKey = X25519.publicKey(privateKey: recipientPrivateKey)
        return keySchedule(dh: dh, enc: enc, recipientPublicKey: recipientPublicKey, info: info)
    }

    private static func keySchedule(
        dh: [UInt8], enc: [UInt8], recipientPublicKey: [UInt8],
        info: [UInt8]
    ) -> Context {
        var eaePRK = labeledExtract(kemSuite, salt: [], label: "eae_prk", ikm: dh)
        defer { Sodium.zeroize(&eaePRK) }
        let sharedSecret = labeledExpand(
            kemSuite, prk: eaePRK, label: "shared_secret",
            info: enc + recipientPublicKey, length: 32)

        // §5.1, mode_base: empty psk and psk_id.
        let scheduleContext =
            [0x00]
            + labeledExtract(hpkeSuite, salt: [], label: "psk_id_hash", ikm: [])
            + labeledExtract(hpkeSuite, salt: [], label: "info_hash", ikm: info)
        var secret = labeledExtract(hpkeSuite, salt: sharedSecret, label: "secret", ikm: [])
        defer { Sodium.zeroize(&secret) }
        return Context(
            sharedSecret: sharedSecret,
            key: labeledExpand(
                hpkeSuite, prk: secret, label: "key", info: scheduleContext,
                length: Int(crypto_aead_chacha20poly1305_ietf_keybytes())),
            baseNonce: labeledExpand(
                hpkeSuite, prk: secret, label: "base_nonce", info: scheduleContext,
                length: Int(crypto_aead_chacha20poly1305_ietf_npubbytes())))
    }

    // MARK: AEAD, sequence number 0 (the nonce is the base nonce)

    static func seal(_ plaintext: [UInt8], context: Context) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var sealedLength: UInt64 = 0
        let status = sealed.withSodiumMutablePointer { out in
            plaintext.withSodiumPointer { message in
                context.key.withSodiumPointer { key in
                    context.baseNonce.withSodiumPointer { nonce in
                        crypto_aead_chacha20poly1305_ietf_encrypt(
                            out, &sealedLength, message, UInt64(plaintext.count), nil, 0, nil, nonce, key)
                    }
                }
            }
        }
        precondition(status == 0 && Int(sealedLength) == sealed.count, "ChaCha20-Poly1305 encryption failed")
        return sealed
    }

    static func open(_ sealed: [UInt8], context: Context) throws(SealingError) -> [UInt8] {
        guard sealed.count >= tagLength else { throw .malformedEnvelope }
        var plaintext = [UInt8](repeating: 0, count: sealed.count - tagLength)
        var plaintextLength: UInt64 = 0
        let status = plaintext.withSodiumMutablePointer { out in
            sealed.withSodiumPointer { ciphertext in
                context.key.withSodiumPointer { key in
                    context.baseNonce.withSodiumPointer { nonce in
                        crypto_aead_chacha20poly1305_ietf_decrypt(
                            out, &plaintextLength, nil, ciphertext, UInt64(sealed.count), nil, 0, nonce, key)
                    }
                }
            }
        }
        guard status == 0 else { throw .openFailed }
        return plaintext
    }

    // MARK: Labeled HKDF-SHA256 (RFC 9180 §4, RFC 5869)

    static func labeledExtract(_ suite: [UInt8], salt: [UInt8], label: String, ikm: [UInt8]) -> [UInt8] {
        // An empty salt is HashLen zero bytes; HMAC pads either to the same block.
        Sodium.hmacSHA256(key: salt, version, suite, Array(label.utf8), ikm)
    }

    /// HKDF-Expand for at most one SHA-256 block: this suite never asks for more than 32 bytes.
    static func labeledExpand(
        _ suite: [UInt8], prk: [UInt8], label: String, info: [UInt8],
        length: Int
    ) -> [UInt8] {
        precondition((1...32).contains(length), "labeledExpand: one HMAC block at most")
        let labeledInfo = [0x00, UInt8(length)] + version + suite + Array(label.utf8) + info
        var block = Sodium.hmacSHA256(key: prk, labeledInfo, [0x01])
        defer { Sodium.zeroize(&block) }
        return Array(block.prefix(length))
    }
}
