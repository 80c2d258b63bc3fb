import Testing
import XMPP

@Suite struct ComponentHandshakeTests {
    // XEP-0114 §3 shows the stream id 3BF96D32 but not the secret behind its example digest, so the
    // expected values were computed independently with coreutils `sha1sum`.
    @Test(arguments: [
        ("", "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),  // FIPS 180-1's "abc"
        ("3BF96D32", "sNmgPU1m", "aa98a38ca7350282592a9904f7e34fffe95f498b"),
        ("id-1", "s3cr€t", "e77d71490b1069784795d0b17b9038f7d9cda1b6"),  // the secret as UTF-8
    ])
    func digestIsLowercaseHexSHA1OfStreamIDThenSecret(streamID: String, secret: String, expected: String) {
        #expect(ComponentHandshake.digest(streamID: streamID, secret: secret) == expected)
    }

    @Test func theOrderOfIDAndSecretMatters() {
        #expect(
            ComponentHandshake.digest(streamID: "a", secret: "b")
                != ComponentHandshake.digest(streamID: "b", secret: "a"))
    }
}
