import Testing

@testable import Sealing

@Suite struct SodiumTests {
    @Test func randomBytesHaveTheLengthAskedAndDiffer() {
        #expect(Sodium.randomBytes(0).isEmpty)
        let first = Sodium.randomBytes(32)
        #expect(first.count == 32)
        #expect(first != Sodium.randomBytes(32))
    }

    @Test func zeroizeOverwritesInPlace() {
        var secret: [UInt8] = [1, 2, 3, 4]
        Sodium.zeroize(&secret)
        #expect(secret == [0, 0, 0, 0])
        var empty: [UInt8] = []
        Sodium.zeroize(&empty)
        #expect(empty.isEmpty)
    }

    @Test func constantTimeEqualComparesLengthAndContents() {
        #expect(Sodium.constantTimeEqual([], []))
        #expect(Sodium.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!Sodium.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!Sodium.constantTimeEqual([1, 2, 3], [1, 2]))
    }

    @Test func isZeroSeesAnyNonZeroByte() {
        #expect(Sodium.isZero([0, 0, 0]))
        #expect(!Sodium.isZero([0, 0, 1]))
    }

    @Test func sha256MatchesFIPS180Examples() {
        #expect(
            Sodium.sha256(Array("abc".utf8))
                == bytes(hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
        #expect(
            Sodium.sha256([])
                == bytes(hex: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    /// RFC 4231 test cases 2 and 6 (a short key, and a key longer than the block), with the
    /// message split across parts to show the parts are concatenated.
    @Test func hmacSHA256MatchesRFC4231() {
        #expect(
            Sodium.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want ".utf8), Array("for nothing?".utf8))
                == bytes(hex: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        #expect(
            Sodium.hmacSHA256(
                key: [UInt8](repeating: 0xaa, count: 131),
                Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                == bytes(hex: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
    }

    @Test func hmacWithAnEmptyKeyEqualsHMACWithHashLenZeros() {
        // HKDF-Extract with no salt relies on this (RFC 5869 §2.2).
        #expect(
            Sodium.hmacSHA256(key: [], [1, 2, 3])
                == Sodium.hmacSHA256(key: [UInt8](repeating: 0, count: 32), [1, 2, 3]))
    }
}
