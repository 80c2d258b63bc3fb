import Testing

@testable import Sealing

@Suite struct KeyPairTests {
    @Test(arguments: try TestVectors.load().cases)
    func derivesTheVectorsPublicKey(_ vector: TestVectors.Case) throws {
        let pair = try KeyPair(privateKey: bytes(hex: vector.recipientPrivateKeyHex))
        #expect(pair.publicKey == bytes(hex: vector.recipientPublicKeyHex))
        #expect(Base64.encode(pair.publicKey) == vector.recipientPublicKeyB64)
    }

    @Test func generatesDistinct32ByteKeysThatMatch() throws {
        let first = KeyPair.generate()
        let second = KeyPair.generate()
        #expect(first.privateKey.count == 32 && first.publicKey.count == 32)
        #expect(first.privateKey != second.privateKey)
        #expect(try KeyPair(privateKey: first.privateKey).publicKey == first.publicKey)
    }

    @Test(arguments: [0, 16, 31, 33, 64])
    func refusesAPrivateKeyThatIsNot32Bytes(length: Int) {
        #expect(throws: SealingError.invalidPrivateKey) {
            try KeyPair(privateKey: [UInt8](repeating: 1, count: length))
        }
    }

    @Test func descriptionShowsOnlyAFingerprintOfThePublicKey() {
        let pair = KeyPair.generate()
        let text = String(describing: pair)
        #expect(text.contains(Fingerprint.of(pair.publicKey)))
        #expect(!text.contains(Base64.encode(pair.privateKey)))
        #expect(!text.contains(String(describing: pair.privateKey)))
    }

    @Test func sharedSecretAgreesBothWays() throws {
        let alice = KeyPair.generate()
        let bob = KeyPair.generate()
        #expect(
            try X25519.sharedSecret(privateKey: alice.privateKey, publicKey: bob.publicKey)
                == X25519.sharedSecret(privateKey: bob.privateKey, publicKey: alice.publicKey))
    }

    @Test func sharedSecretRefusesBadLengths() {
        let pair = KeyPair.generate()
        #expect(throws: SealingError.invalidPublicKey) {
            try X25519.sharedSecret(privateKey: pair.privateKey, publicKey: [1, 2, 3])
        }
        #expect(throws: SealingError.invalidPrivateKey) {
            try X25519.sharedSecret(privateKey: [], publicKey: pair.publicKey)
        }
    }
}
