import Sealing
import Testing

@Suite struct SealingErrorTests {
    @Test func descriptionsNameTheLimits() {
        #expect(SealingError.plaintextTooLarge(2257).description == "plaintext is 2257 bytes, more than 2256")
        #expect(SealingError.envelopeTooLarge.description == "envelope is longer than 3072 characters")
    }

    @Test func plaintextTooLargeCarriesTheCount() {
        #expect(SealingError.plaintextTooLarge(2257) != .plaintextTooLarge(3000))
    }
}
