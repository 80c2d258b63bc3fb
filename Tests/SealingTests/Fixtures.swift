import Foundation

/// `Vectors/apush-v2-vectors.json`, decoded (shared: /work/shared/vectors).
struct TestVectors: Decodable, Sendable {
    struct Case: Decodable, Sendable {
        struct Intermediate: Decodable, Sendable {
            let sharedSecretHex: String
            let keyHex: String
            let baseNonceHex: String
        }
        let id: Int
        let recipientPrivateKeyHex: String
        let recipientPublicKeyHex: String
        let recipientPublicKeyB64: String
        let ephemeralPrivateKeyHex: String
        let encHex: String
        let plaintextHex: String
        let plaintextLen: Int
        let intermediate: Intermediate
        let envelopeB64: String
        let envelopeB64Len: Int
    }

    struct Invalid: Decodable, Sendable {
        let id: String
        let why: String
        let envelopeB64: String
        let recipientPrivateKeyHex: String
    }

    struct CollapseTags: Decodable, Sendable {
        struct Case: Decodable, Sendable {
            let keyHex: String
            let account: String
            let chat: String
            let tag: String
        }
        let cases: [Case]
    }

    let cases: [Case]
    let invalid: [Invalid]
    let collapseTag: CollapseTags

    static func load() throws -> TestVectors {
        guard
            let url = Bundle.module.url(
                forResource: "apush-v2-vectors", withExtension: "json",
                subdirectory: "Vectors")
        else {
            throw CocoaError(.fileNoSuchFile)
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(TestVectors.self, from: Data(contentsOf: url))
    }
}

/// Decodes hex written by the vectors file; a bad digit is a broken fixture, so it traps.
func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    precondition(digits.count.isMultiple(of: 2), "odd hex length")
    return stride(from: 0, to: digits.count, by: 2).map {
        UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)!
    }
}
