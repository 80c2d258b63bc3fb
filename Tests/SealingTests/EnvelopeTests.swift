import Testing
import TestSupport

@testable import Sealing

@Suite struct EnvelopeTests {
    static let vectors = Result { try TestVectors.load() }

    @Test func limitsMatchTheVectorsSpec() {
        #expect(Envelope.label == "apush-v2")
        #expect(Envelope.maxEncodedLength == 3072)
        #expect(Envelope.maxPlaintextLength == 2256)
    }

    @Test(arguments: try vectors.get().cases)
    func sealReproducesVectorByteForByte(_ vector: TestVectors.Case) throws {
        let envelope = try Envelope.seal(
            bytes(hex: vector.plaintextHex),
            to: bytes(hex: vector.recipientPublicKeyHex),
            ephemeralPrivateKey: bytes(hex: vector.ephemeralPrivateKeyHex))
        #expect(envelope == vector.envelopeB64)
        #expect(envelope.utf8.count == vector.envelopeB64Len)
        let raw = try #require(Base64.decode(envelope))
        #expect(Array(raw.prefix(32)) == bytes(hex: vector.encHex))
    }

    @Test(arguments: try vectors.get().cases)
    func openRecoversVectorPlaintext(_ vector: TestVectors.Case) throws {
        let plaintext = try Envelope.open(vector.envelopeB64, privateKey: bytes(hex: vector.recipientPrivateKeyHex))
        #expect(plaintext == bytes(hex: vector.plaintextHex))
        #expect(plaintext.count == vector.plaintextLen)
    }

    @Test(arguments: try vectors.get().invalid)
    func openRejectsInvalidVector(_ vector: TestVectors.Invalid) {
        #expect(throws: SealingError.self, "\(vector.id): \(vector.why)") {
            try Envelope.open(vector.envelopeB64, privateKey: bytes(hex: vector.recipientPrivateKeyHex))
        }
    }

    @Test func openNamesWhyEachInvalidVectorFails() throws {
        let expected: [String: SealingError] = [
            "tag-flipped": .openFailed, "ciphertext-flipped": .openFailed, "enc-flipped": .openFailed,
            "wrong-info": .openFailed, "nonempty-aad": .openFailed, "low-order-enc": .allZeroSharedSecret,
            "truncated": .malformedEnvelope, "not-base64": .malformedEnvelope, "over-limit": .envelopeTooLarge,
        ]
        let invalid = try Self.vectors.get().invalid
        #expect(Set(invalid.map(\.id)) == Set(expected.keys))
        for vector in invalid {
            let error = try #require(expected[vector.id])
            #expect(throws: error, "\(vector.id)") {
                try Envelope.open(vector.envelopeB64, privateKey: bytes(hex: vector.recipientPrivateKeyHex))
            }
        }
    }

    @Test(arguments: [0, 1, 174, 2256])
    func roundTripsWithRandomKeys(plaintextLength: Int) throws {
        let recipient = KeyPair.generate()
        let plaintext = Sodium.randomBytes(plaintextLength)
        let envelope = try Envelope.seal(plaintext, to: recipient.publicKey)
        #expect(envelope.utf8.count == (plaintextLength + Envelope.overhead + 2) / 3 * 4)
        #expect(try Envelope.open(envelope, privateKey: recipient.privateKey) == plaintext)
    }

    @Test(arguments: [0, 1, 174, 2256])
    func independentPythonOpenerOpensEverySealedEnvelope(plaintextLength: Int) async throws {
        let recipient = KeyPair.generate()
        let plaintext = Sodium.randomBytes(plaintextLength)
        let envelope = try Envelope.seal(plaintext, to: recipient.publicKey)
        let outcome = try await IndependentOpener.run(envelope, privateKey: recipient.privateKey)
        #expect(outcome.status == 0, "\(outcome.diagnostics)")
        #expect(outcome.plaintext == plaintext)
    }

    @Test func independentPythonOpenerRejectsAnEnvelopeForAnotherKey() async throws {
        let envelope = try Envelope.seal(Array("{}".utf8), to: KeyPair.generate().publicKey)
        let outcome = try await IndependentOpener.run(envelope, privateKey: KeyPair.generate().privateKey)
        #expect(outcome.status == 1)
        #expect(outcome.plaintext.isEmpty)
    }

    @Test func everySealUsesAFreshEphemeralKey() throws {
        let recipient = KeyPair.generate()
        let plaintext = Array("same summary".utf8)
        let first = try #require(Base64.decode(Envelope.seal(plaintext, to: recipient.publicKey)))
        let second = try #require(Base64.decode(Envelope.seal(plaintext, to: recipient.publicKey)))
        #expect(first.prefix(32) != second.prefix(32))
        #expect(first.dropFirst(32) != second.dropFirst(32))
    }

    @Test func aSealWithAPooledKeyOpensIndependentlyAndNeverRepeatsItsKey() async throws {
        let recipient = KeyPair.generate()
        let pool = EphemeralKeyPool(capacity: 4)
        pool.settle()
        let plaintext = Array("same summary".utf8)
        let envelopes = try (0..<6).map { _ in try Envelope.seal(plaintext, to: recipient.publicKey, keys: pool) }
        let outcome = try await IndependentOpener.run(envelopes[0], privateKey: recipient.privateKey)
        #expect(outcome.status == 0, "\(outcome.diagnostics)")
        #expect(outcome.plaintext == plaintext)
        let encs = try envelopes.map { try #require(Base64.decode($0)).prefix(32) }
        #expect(Set(encs.map(Array.init)).count == envelopes.count)
    }

    @Test func openWithTheWrongKeyFails() throws {
        let envelope = try Envelope.seal(Array("x".utf8), to: KeyPair.generate().publicKey)
        #expect(throws: SealingError.openFailed) {
            try Envelope.open(envelope, privateKey: KeyPair.generate().privateKey)
        }
    }

    @Test func sealRefusesOneByteOverTheLimit() throws {
        let recipient = KeyPair.generate()
        let atLimit = [UInt8](repeating: 0x20, count: Envelope.maxPlaintextLength)
        #expect(try Envelope.seal(atLimit, to: recipient.publicKey).utf8.count == Envelope.maxEncodedLength)
        #expect(throws: SealingError.plaintextTooLarge(2257)) {
            try Envelope.seal(atLimit + [0x20], to: recipient.publicKey)
        }
    }

    @Test(arguments: [0, 31, 33, 64])
    func sealRefusesARecipientKeyThatIsNot32Bytes(length: Int) {
        #expect(throws: SealingError.invalidPublicKey) {
            try Envelope.seal(Array("x".utf8), to: [UInt8](repeating: 9, count: length))
        }
    }

    @Test(arguments: [0, 31, 33])
    func sealAndOpenRefuseAPrivateKeyThatIsNot32Bytes(length: Int) {
        let key = [UInt8](repeating: 7, count: length)
        #expect(throws: SealingError.invalidPrivateKey) {
            try Envelope.seal(Array("x".utf8), to: KeyPair.generate().publicKey, ephemeralPrivateKey: key)
        }
        #expect(throws: SealingError.invalidPrivateKey) {
            try Envelope.open(String(repeating: "A", count: 64), privateKey: key)
        }
    }

    /// Points of small order on Curve25519 (RFC 7748 §6.1 asks to reject their all-zero output).
    static let lowOrderPoints: [[UInt8]] = [
        [UInt8](repeating: 0, count: 32),
        [1] + [UInt8](repeating: 0, count: 31),
        bytes(hex: "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        bytes(hex: "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157"),
    ]

    @Test(arguments: lowOrderPoints)
    func sealAbortsOnALowOrderRecipientKey(point: [UInt8]) {
        #expect(throws: SealingError.allZeroSharedSecret) {
            try Envelope.seal(Array("x".utf8), to: point)
        }
    }

    @Test(arguments: lowOrderPoints)
    func openRejectsALowOrderEnc(point: [UInt8]) throws {
        let recipient = KeyPair.generate()
        let envelope = try Envelope.seal(Array("x".utf8), to: recipient.publicKey)
        let raw = try #require(Base64.decode(envelope))
        #expect(throws: SealingError.allZeroSharedSecret) {
            try Envelope.open(Base64.encode(point + raw.dropFirst(32)), privateKey: recipient.privateKey)
        }
    }

    @Test(arguments: ["", "AAAA", String(repeating: "A", count: 60) + "AA=="])
    func openRejectsAnEnvelopeShorterThanEncAndTag(envelope: String) {
        #expect(throws: SealingError.malformedEnvelope) {
            try Envelope.open(envelope, privateKey: KeyPair.generate().privateKey)
        }
    }

    @Test func openRejectsWhitespaceAndBase64URL() throws {
        let vector = try Self.vectors.get().cases[0]
        let envelope = vector.envelopeB64
        let privateKey = bytes(hex: vector.recipientPrivateKeyHex)
        let urlForm = String(envelope.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
        #expect(urlForm != envelope)
        #expect(try Envelope.open(envelope, privateKey: privateKey).count == vector.plaintextLen)
        for variant in [
            envelope + "\n", " " + envelope, envelope.prefix(76) + "\r\n" + envelope.dropFirst(76), urlForm,
        ] {
            #expect(throws: SealingError.malformedEnvelope) {
                try Envelope.open(variant, privateKey: privateKey)
            }
        }
    }
}
