/// A short public name for a secret (a device token, a key) that logs and admin listings may show:
/// "#" and the first 8 hex digits of its SHA-256. It identifies; it does not reveal.
public enum Fingerprint {
    public static let hexDigits = 8

    public static func of(_ secret: String) -> String {
        of(Array(secret.utf8))
    }

    public static func of(_ bytes: [UInt8]) -> String {
        let digest = Sodium.sha256(bytes).prefix(hexDigits / 2)
        return "#" + String(decoding: digest.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0x0f)]] }, as: UTF8.self)
    }

    private static let hex = Array("0123456789abcdef".utf8)
}
