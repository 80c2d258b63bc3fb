import CSodium

/// Strict RFC 4648 base64 over libsodium, without Foundation. A decoder returns nil for anything
/// that is not the one canonical encoding of some bytes in its alphabet: no whitespace, no other
/// alphabet, correct padding, zero trailing bits.
public enum Base64 {
    /// §4: standard alphabet (`+/`), `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        encode(Array(bytes), variant: sodium_base64_VARIANT_ORIGINAL)
    }

    /// §4: standard alphabet, padding required.
    public static func decode(_ string: String) -> [UInt8]? {
        decode(string, variant: sodium_base64_VARIANT_ORIGINAL)
    }

    /// §5: URL-safe alphabet (`-_`), no padding.
    public static func encodeURLNoPad(_ bytes: some Collection<UInt8>) -> String {
        encode(Array(bytes), variant: sodium_base64_VARIANT_URLSAFE_NO_PADDING)
    }

    /// §5: URL-safe alphabet, either unpadded or correctly padded (RFC 4648 §3.2 lets a
    /// specification drop the padding, so both forms occur in the wild). Mixed alphabets fail.
    public static func decodeURL(_ string: String) -> [UInt8]? {
        decode(
            string,
            variant: string.utf8.contains(UInt8(ascii: "="))
                ? sodium_base64_VARIANT_URLSAFE : sodium_base64_VARIANT_URLSAFE_NO_PADDING)
    }

    private static func encode(_ bytes: [UInt8], variant: Int32) -> String {
        let capacity = sodium_base64_encoded_len(bytes.count, variant)  // includes the NUL
        var text = [CChar](repeating: 0, count: capacity)
        bytes.withSodiumPointer { input in
            text.withUnsafeMutableBufferPointer { output in
                _ = sodium_bin2base64(output.baseAddress!, output.count, input, bytes.count, variant)
            }
        }
        return String(decoding: text.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func decode(_ string: String, variant: Int32) -> [UInt8]? {
        let text = Array(string.utf8)
        var bytes = [UInt8](repeating: 0, count: text.count / 4 * 3 + 3)
        var length = 0
        // A nil `b64_end` makes libsodium fail unless the whole input was consumed; a nil `ignore`
        // admits no whitespace. libsodium also refuses non-zero trailing bits and wrong padding
        // (Base64Tests holds it to that).
        let capacity = bytes.count
        let status = text.withSodiumPointer { input in
            bytes.withSodiumMutablePointer { output in
                input.withMemoryRebound(to: CChar.self, capacity: text.count) {
                    sodium_base642bin(output, capacity, $0, text.count, nil, &length, nil, variant)
                }
            }
        }
        guard status == 0 else { return nil }
        bytes.removeSubrange(length...)
        return bytes
    }
}
