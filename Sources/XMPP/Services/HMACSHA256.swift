internal import CCrypto

/// HMAC-SHA256 (RFC 2104) over libcrypto.
enum HMACSHA256 {
    static let length = 32

    static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        // RFC 2104 hashes a key longer than the block first; doing it here keeps the length an Int32.
        let key = key.count > 64 ? sha256(key) : key
        var output = [UInt8](repeating: 0, count: length)
        var written: UInt32 = 0
        // A one-byte buffer stands in for an empty key or message: libcrypto wants a pointer.
        let keyBuffer = key.isEmpty ? [0] : key
        let messageBuffer = message.isEmpty ? [0] : message
        keyBuffer.withUnsafeBufferPointer { keyPointer in
            messageBuffer.withUnsafeBufferPointer { messagePointer in
                output.withUnsafeMutableBufferPointer { outputPointer in
                    _ = HMAC(
                        EVP_sha256(), keyPointer.baseAddress, Int32(key.count), messagePointer.baseAddress,
                        message.count, outputPointer.baseAddress, &written)
                }
            }
        }
        return output
    }

    /// Equality that takes as long whichever byte differs, so a forger learns nothing from the time.
    static func equal(_ first: [UInt8], _ second: [UInt8]) -> Bool {
        guard first.count == second.count, !first.isEmpty else { return false }
        return first.withUnsafeBytes { a in
            second.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: length)
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in
                _ = SHA256(input.baseAddress, input.count, output.baseAddress)
            }
        }
        return digest
    }
}
