import Sealing
import Testing

@Suite struct Base64Tests {
    // RFC 4648 §10.
    static let rfcVectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: rfcVectors)
    func standardMatchesRFC4648(text: String, encoded: String) {
        #expect(Base64.encode(Array(text.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(text.utf8))
    }

    @Test func alphabetsDifferOnlyInTheLastTwoDigitsAndPadding() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xbf, 0xfe]
        #expect(Base64.encode(bytes) == "+/+//g==")
        #expect(Base64.encodeURLNoPad(bytes) == "-_-__g")
        #expect(Base64.decodeURL("-_-__g") == bytes)
        #expect(Base64.decodeURL("-_-__g==") == bytes)
    }

    @Test(arguments: [
        "Zg", "Zg=", "Zg===", "Zm8", "Zh==", "Zm9=",  // missing or wrong padding, non-zero trailing bits
        "-_-__g==", "Zm9v_w==",  // URL alphabet
        " Zm9v", "Zm9v ", "Zm9v\n", "Zm\n9v", "Zm9v\r\n", "\tZm9v",  // whitespace anywhere
        "Zg==Zg==", "====", "Z===", "Zm9v!", "Zm9vYg==\0",  // padding inside, junk
    ])
    func standardDecodeRejectsAnythingNonCanonical(input: String) {
        #expect(Base64.decode(input) == nil)
    }

    @Test(arguments: [
        "+_-_", "/w", "Zh", "Zg=", "Zg===", "Zg=x", " Zg", "Zg\n", "Z",
    ])
    func urlDecodeRejectsAnythingNonCanonical(input: String) {
        #expect(Base64.decodeURL(input) == nil)
    }

    @Test(arguments: 0..<40)
    func roundTripsEveryLength(length: Int) {
        let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        #expect(Base64.decodeURL(Base64.encodeURLNoPad(bytes)) == bytes)
        #expect(!Base64.encodeURLNoPad(bytes).contains("="))
    }

    @Test func decodesARawX25519PublicKeyAsPublishOptionsCarryIt() {
        let key = Base64.decode("Jm01EsP8eORzmryrgbTr+/73EA+Yrhl5lnfvvM7/cwI=")
        #expect(key?.count == 32)
    }
}
