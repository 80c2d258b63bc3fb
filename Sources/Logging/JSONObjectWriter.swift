/// A JSON object written by hand, keys in the order they are added: compact, with no Foundation, for
/// log lines (`LogEvent.json`) and the push summary. Values are strings, integers, booleans, lists of
/// strings, or JSON already written (`addRaw`).
public struct JSONObjectWriter {
    private var output = "{"
    private var first = true

    public init() {}

    public mutating func add(_ key: String, _ value: String) { addRaw(key, Self.quoted(value)) }
    public mutating func add(_ key: String, _ value: Int) { addRaw(key, String(value)) }
    public mutating func add(_ key: String, _ value: Bool) { addRaw(key, value ? "true" : "false") }
    public mutating func add(_ key: String, _ values: [String]) {
        addRaw(key, "[" + values.map(Self.quoted).joined(separator: ",") + "]")
    }

    public mutating func addRaw(_ key: String, _ json: String) {
        if !first { output += "," }
        first = false
        output += Self.quoted(key)
        output += ":"
        output += json
    }

    public func finish() -> String { output + "}" }

    /// RFC 8259 string escaping: quotes, backslash and control characters.
    public static func quoted(_ text: String) -> String {
        // Most values (JIDs, ids, kinds) need no escape: one scan of the bytes, one copy.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + text + "\""
        }
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
