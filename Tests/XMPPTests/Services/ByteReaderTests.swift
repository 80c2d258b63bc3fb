import Testing

@testable import XMPP

@Suite struct ByteReaderTests {
    @Test func readsWhatWasWrittenAndNothingPastTheEnd() {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(0x0102_0304, width: 4)
        let appended = bytes.appendString("zürich")
        #expect(appended)
        var reader = ByteReader(bytes: bytes)
        #expect(reader.integer(width: 4) == 0x0102_0304)
        #expect(reader.string() == "zürich")
        #expect(reader.isAtEnd)
        #expect(reader.integer(width: 1) == nil)
    }

    @Test func aLengthPastTheBytesIsNil() {
        var reader = ByteReader(bytes: [0, 9, 65])
        #expect(reader.string() == nil)
    }

    @Test func aStringLongerThanTwoBytesCanCountIsRefused() {
        var bytes: [UInt8] = []
        let tooLong = bytes.appendString(String(repeating: "a", count: 65_536))
        #expect(!tooLong && bytes.isEmpty)
        let longest = bytes.appendString(String(repeating: "a", count: 65_535))
        #expect(longest && bytes.count == 65_537)
    }
}
