import Testing

@testable import XMPP

@Suite struct HMACSHA256Tests {
    /// RFC 4231's test cases 1 and 6: a short key, and a key longer than the block (hashed first).
    @Test func matchesRFC4231() {
        let one = HMACSHA256.mac(key: [UInt8](repeating: 0x0b, count: 20), message: Array("Hi There".utf8))
        #expect(hex(one) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let six = HMACSHA256.mac(
            key: [UInt8](repeating: 0xaa, count: 131),
            message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(hex(six) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func anEmptyKeyOrMessageIsMACedAsEmpty() {
        #expect(
            hex(HMACSHA256.mac(key: [], message: []))
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func equalComparesWholeMACsOnly() {
        let mac = HMACSHA256.mac(key: [1], message: [2])
        #expect(HMACSHA256.equal(mac, mac))
        #expect(!HMACSHA256.equal(mac, Array(mac.dropLast()) + [mac.last! ^ 1]))
        #expect(!HMACSHA256.equal(mac, Array(mac.dropLast())))
        #expect(!HMACSHA256.equal([], []))
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
