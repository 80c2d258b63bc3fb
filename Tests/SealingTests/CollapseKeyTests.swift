import Sealing
import Testing

@Suite struct CollapseKeyTests {
    @Test(arguments: try TestVectors.load().collapseTag.cases)
    func tagMatchesVector(_ vector: TestVectors.CollapseTags.Case) throws {
        let key = try CollapseKey(bytes: bytes(hex: vector.keyHex))
        #expect(key.tag(account: vector.account, chat: vector.chat) == vector.tag)
    }

    @Test func tagIs43URLSafeCharactersAndSeparatesAccountFromChat() throws {
        let key = CollapseKey.random()
        let tag = key.tag(account: "alice@example.org", chat: "bob@example.org")
        #expect(tag.utf8.count == 43)
        #expect(Base64.decodeURL(tag)?.count == 32)
        // The 0x00 separator keeps a shifted boundary from colliding.
        #expect(key.tag(account: "ab", chat: "c") != key.tag(account: "a", chat: "bc"))
        #expect(tag == key.tag(account: "alice@example.org", chat: "bob@example.org"))
    }

    @Test func differentKeysGiveDifferentTags() {
        let first = CollapseKey.random()
        let second = CollapseKey.random()
        #expect(first != second)
        #expect(first.tag(account: "a@x", chat: "b@x") != second.tag(account: "a@x", chat: "b@x"))
    }

    @Test(arguments: [0, 31, 33])
    func refusesAKeyThatIsNot32Bytes(length: Int) {
        #expect(throws: SealingError.invalidCollapseKey) {
            try CollapseKey(bytes: [UInt8](repeating: 0, count: length))
        }
    }

    @Test func equalityComparesBytes() throws {
        let key = CollapseKey.random()
        #expect(try CollapseKey(bytes: key.bytes) == key)
        var other = key.bytes
        other[31] ^= 1
        #expect(try CollapseKey(bytes: other) != key)
    }

    @Test func descriptionDoesNotRevealTheKey() {
        let key = CollapseKey.random()
        #expect(String(describing: key) == "CollapseKey(\(Fingerprint.of(key.bytes)))")
    }
}
