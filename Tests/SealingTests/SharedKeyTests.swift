import Testing

@testable import Sealing

@Suite struct SharedKeyTests {
    /// RFC 4231's first test case, with the label standing in for the secret's message: the key is
    /// HMAC-SHA256(secret, label).
    @Test func theKeyIsTheHMACOfTheLabelUnderTheSecret() {
        let key = SharedKey(secret: String(repeating: "\u{0b}", count: 20), label: "Hi There")
        #expect(
            key.bytes.map { String($0, radix: 16).leftPadded }.joined()
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func eachLabelAndEachSecretGivesAKeyOfItsOwn() {
        let message = Array("answer <iq/>".utf8)
        let key = SharedKey(secret: "secret", label: "one use")
        #expect(key.mac(message) == SharedKey(secret: "secret", label: "one use").mac(message))
        #expect(key.mac(message) != SharedKey(secret: "secret", label: "another use").mac(message))
        #expect(key.mac(message) != SharedKey(secret: "other secret", label: "one use").mac(message))
    }

    @Test func onlyTheMessagesOwnMACAuthenticatesIt() {
        let key = SharedKey(secret: "secret", label: "test")
        let message = Array("1764430000000".utf8)
        let mac = key.mac(message)
        #expect(key.authenticates(mac, of: message))
        #expect(!key.authenticates(mac, of: Array("1764430000001".utf8)))
        #expect(!key.authenticates(Array(mac.dropLast()), of: message))
        #expect(!key.authenticates([], of: message))
        var flipped = mac
        flipped[0] ^= 1
        #expect(!key.authenticates(flipped, of: message))
    }

    /// What a signer with only SHA-256 computes from the pads is the HMAC.
    @Test func thePadsGiveTheHMACThroughSHA256Alone() {
        let key = SharedKey(secret: "secret", label: "test")
        let message = Array("apush_due 1764430000000".utf8)
        let (inner, outer) = key.hmacPads
        #expect(inner.count == 64 && outer.count == 64)
        #expect(Sodium.sha256(outer + Sodium.sha256(inner + message)) == key.mac(message))
    }

    @Test func itsDescriptionShowsAFingerprintNotTheKey() {
        let key = SharedKey(secret: "secret", label: "test")
        #expect(key.description.hasPrefix("SharedKey(#"))
        #expect(!key.description.contains(key.bytes.map { String($0, radix: 16).leftPadded }.joined()))
    }
}

extension String {
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
