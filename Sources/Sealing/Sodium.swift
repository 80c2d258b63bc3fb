import CSodium

/// The libsodium calls the rest of the target shares: one-time initialisation, randomness,
/// zeroisation, constant-time comparison and the SHA-256 family.
enum Sodium {
    /// `sodium_init()` must have run before the first random or cryptographic call; a lazy
    /// static runs it exactly once, thread-safely.
    private static let initialized: Bool = sodium_init() >= 0

    static func ensureInitialized() {
        precondition(initialized, "libsodium failed to initialise")
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialized()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withSodiumMutablePointer { randombytes_buf($0, count) }
        return bytes
    }

    /// Overwrites the array's storage in place, in a way the compiler may not elide.
    static func zeroize(_ bytes: inout [UInt8]) {
        let count = bytes.count
        bytes.withSodiumMutablePointer { sodium_memzero($0, count) }
    }

    /// Equal lengths and equal contents, in time that depends only on the length.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withSodiumPointer { left in
            rhs.withSodiumPointer { right in sodium_memcmp(left, right, lhs.count) == 0 }
        }
    }

    static func isZero(_ bytes: [UInt8]) -> Bool {
        bytes.withSodiumPointer { sodium_is_zero($0, bytes.count) == 1 }
    }

    static func sha256(_ message: [UInt8]) -> [UInt8] {
        ensureInitialized()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_bytes()))
        digest.withSodiumMutablePointer { out in
            message.withSodiumPointer { _ = crypto_hash_sha256(out, $0, UInt64(message.count)) }
        }
        return digest
    }

    /// HMAC-SHA256 over the concatenation of `parts`, keyed with `key` of any length.
    static func hmacSHA256(key: [UInt8], _ parts: [UInt8]...) -> [UInt8] {
        ensureInitialized()
        var state = crypto_auth_hmacsha256_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) } }
        key.withSodiumPointer { _ = crypto_auth_hmacsha256_init(&state, $0, key.count) }
        for part in parts {
            part.withSodiumPointer { _ = crypto_auth_hmacsha256_update(&state, $0, UInt64(part.count)) }
        }
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_bytes()))
        mac.withSodiumMutablePointer { _ = crypto_auth_hmacsha256_final(&state, $0) }
        return mac
    }
}

extension Array where Element == UInt8 {
    /// libsodium declares its pointers nonnull even beside a length of 0, and an empty array may
    /// have no storage: these hand over a valid pointer in every case.
    func withSodiumPointer<Result>(_ body: (UnsafePointer<UInt8>) -> Result) -> Result {
        withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { return body(base) }
            return withUnsafePointer(to: UInt8(0)) { body($0) }
        }
    }

    mutating func withSodiumMutablePointer<Result>(_ body: (UnsafeMutablePointer<UInt8>) -> Result) -> Result {
        withUnsafeMutableBufferPointer { buffer in
            if let base = buffer.baseAddress { return body(base) }
            var placeholder: UInt8 = 0
            return body(&placeholder)
        }
    }
}
