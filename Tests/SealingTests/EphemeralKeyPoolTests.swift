import Testing

@testable import Sealing

@Suite struct EphemeralKeyPoolTests {
    @Test func fillsToCapacityInTheBackground() {
        let pool = EphemeralKeyPool(capacity: 8)
        pool.settle()
        #expect(pool.ready == 8)
    }

    @Test func eachKeyIsHandedOutOnceAndItsPublicHalfIsItsOwn() {
        let pool = EphemeralKeyPool(capacity: 16)
        pool.settle()
        var seen = Set<[UInt8]>()
        for _ in 0..<40 {
            let key = pool.take()
            #expect(seen.insert(key.privateKey).inserted)
            #expect(key.publicKey == X25519.publicKey(privateKey: key.privateKey))
        }
    }

    @Test func aTakeBelowHalfRefillsAndAFullPoolIsLeftAlone() {
        let pool = EphemeralKeyPool(capacity: 8)
        pool.settle()
        for _ in 0..<4 { _ = pool.take() }
        pool.settle()
        #expect(pool.ready == 4, "at half full, no refill yet")
        _ = pool.take()
        pool.settle()
        #expect(pool.ready == 8)
    }

    @Test func anEmptyPoolStillHandsOutAFreshKey() {
        let pool = EphemeralKeyPool(capacity: 1)
        pool.settle()
        let first = pool.take()
        let second = pool.take()
        #expect(first.privateKey != second.privateKey)
    }
}
