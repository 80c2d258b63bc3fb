import Testing

@testable import Sealing

@Suite struct HPKETests {
    static let info = Array("apush-v2".utf8)

    @Test(arguments: try TestVectors.load().cases)
    func senderAndRecipientDeriveTheVectorsIntermediates(_ vector: TestVectors.Case) throws {
        let ephemeralPrivateKey = bytes(hex: vector.ephemeralPrivateKeyHex)
        let enc = X25519.publicKey(privateKey: ephemeralPrivateKey)
        let sender = try HPKE.setUpSender(
            recipientPublicKey: bytes(hex: vector.recipientPublicKeyHex),
            ephemeralPrivateKey: ephemeralPrivateKey, enc: enc, info: Self.info)
        let recipient = try HPKE.setUpRecipient(
            enc: enc, recipientPrivateKey: bytes(hex: vector.recipientPrivateKeyHex),
            info: Self.info)
        #expect(enc == bytes(hex: vector.encHex))
        for context in [sender, recipient] {
            #expect(context.sharedSecret == bytes(hex: vector.intermediate.sharedSecretHex))
            #expect(context.key == bytes(hex: vector.intermediate.keyHex))
            #expect(context.baseNonce == bytes(hex: vector.intermediate.baseNonceHex))
        }
    }

    /// RFC 9180 Appendix A.2.1: the same KEM, KDF and AEAD, with info "Ode on a Grecian Urn".
    @Test func reproducesRFC9180AppendixA21() throws {
        let ephemeralPrivateKey = bytes(hex: "f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600")
        let enc = X25519.publicKey(privateKey: ephemeralPrivateKey)
        let context = try HPKE.setUpSender(
            recipientPublicKey: bytes(hex: "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a"),
            ephemeralPrivateKey: ephemeralPrivateKey, enc: enc,
            info: bytes(hex: "4f6465206f6e2061204772656369616e2055726e"))
        #expect(enc == bytes(hex: "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a"))
        #expect(context.sharedSecret == bytes(hex: "0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7"))
        #expect(context.key == bytes(hex: "ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91"))
        #expect(context.baseNonce == bytes(hex: "5c4d98150661b848853b547f"))
        let sealed = HPKE.seal(
            bytes(hex: "4265617574792069732074727574682c20747275746820626561757479"), context: context)
        #expect(sealed.prefix(16) == bytes(hex: "1c5250d8034ec2b784ba2cfd69dbdb8a")[...])
    }

    @Test func zeroizeClearsEverySecretOfAContext() throws {
        let ephemeral = KeyPair.generate()
        let context = try HPKE.setUpSender(
            recipientPublicKey: KeyPair.generate().publicKey,
            ephemeralPrivateKey: ephemeral.privateKey, enc: ephemeral.publicKey, info: Self.info)
        context.zeroize()
        #expect(context.sharedSecret == [UInt8](repeating: 0, count: 32))
        #expect(context.key == [UInt8](repeating: 0, count: 32))
        #expect(context.baseNonce == [UInt8](repeating: 0, count: 12))
    }

    @Test func openRefusesATamperedCiphertext() throws {
        let ephemeral = KeyPair.generate()
        let context = try HPKE.setUpSender(
            recipientPublicKey: KeyPair.generate().publicKey,
            ephemeralPrivateKey: ephemeral.privateKey, enc: ephemeral.publicKey, info: Self.info)
        var sealed = HPKE.seal(Array("hello".utf8), context: context)
        #expect(try HPKE.open(sealed, context: context) == Array("hello".utf8))
        sealed[0] ^= 1
        #expect(throws: SealingError.openFailed) { try HPKE.open(sealed, context: context) }
    }
}
