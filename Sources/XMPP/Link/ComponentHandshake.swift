internal import CCrypto

/// XEP-0114 §3: the handshake is the lowercase hex SHA-1 of the stream id followed by the secret.
public enum ComponentHandshake {
    public static func digest(streamID: String, secret: String) -> String {
        let input = Array((streamID + secret).utf8)
        var hash = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { source in
            hash.withUnsafeMutableBufferPointer { target in
                _ = SHA1(source.baseAddress, source.count, target.baseAddress)
            }
        }
        let digits: [Character] = Array("0123456789abcdef")
        var hex = ""
        hex.reserveCapacity(hash.count * 2)
        for byte in hash {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        return hex
    }
}
