import Sealing
import Testing

@Suite struct FingerprintTests {
    @Test func isHashPrefixedEightHexDigitsOfSHA256() {
        // SHA-256("abc") = ba7816bf8f01cfea…
        #expect(Fingerprint.of("abc") == "#ba7816bf")
        #expect(Fingerprint.of(Array("abc".utf8)) == "#ba7816bf")
        // SHA-256("") = e3b0c442…
        #expect(Fingerprint.of("") == "#e3b0c442")
    }

    @Test(arguments: [
        "abcdef12", "ba7816bf", "#ba7816bf",
        "7f3d1c9a0b2e4f6a8c1d3e5f7a9b0c2d4e6f8a1b3c5d7e9f0a2b4c6d8e0f1a3b",  // an APNs-style token
        "Jm01EsP8eORzmryrgbTr+/73EA+Yrhl5lnfvvM7/cwI=",  // a device key
    ])
    func neverEqualsOrContainsTheSecret(secret: String) {
        let fingerprint = Fingerprint.of(secret)
        #expect(fingerprint.utf8.count == 9)
        #expect(fingerprint.hasPrefix("#"))
        #expect(fingerprint != secret)
        #expect(!fingerprint.contains(secret))
        #expect(!secret.contains(fingerprint.dropFirst()))
    }

    @Test func differsForDifferentSecrets() {
        #expect(Fingerprint.of("token-1") != Fingerprint.of("token-2"))
    }
}
