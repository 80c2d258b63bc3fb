/// A page in Prometheus' text exposition format 0.0.4: each family's `# HELP` and `# TYPE`, then its
/// samples, label values escaped. The caller writes each family once, its samples together.
public struct MetricsText: Sendable {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    public private(set) var text = ""

    public init() {}

    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escaped(help, quotes: false))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample; labels in the order given.
    public mutating func sample(_ name: String, labels: [(String, String)] = [], _ value: Double) {
        write(name, labels, Self.formatted(value))
    }

    public mutating func sample(_ name: String, labels: [(String, String)] = [], _ value: Int64) {
        write(name, labels, String(value))
    }

    private mutating func write(_ name: String, _ labels: [(String, String)], _ value: String) {
        text += name
        if !labels.isEmpty {
            text += "{"
            text += labels.map { "\($0.0)=\"\(Self.escaped($0.1, quotes: true))\"" }.joined(separator: ",")
            text += "}"
        }
        text += " \(value)\n"
    }

    /// A whole histogram: `buckets` are cumulative counts by upper bound, the last one +Inf.
    public mutating func histogram(
        _ name: String, help: String, buckets: [(upperBound: Double, count: Int64)], sum: Double
    ) {
        family(name, .histogram, help: help)
        for bucket in buckets {
            sample(name + "_bucket", labels: [("le", Self.formatted(bucket.upperBound))], bucket.count)
        }
        sample(name + "_sum", sum)
        sample(name + "_count", buckets.last?.count ?? 0)
    }

    /// Label values escape backslash, double quote and line feed; help text the first and the last.
    static func escaped(_ text: String, quotes: Bool) -> String {
        var result = ""
        for character in text.unicodeScalars {
            switch character {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\"" where quotes: result += "\\\""
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// Go's float syntax as Prometheus reads it: `+Inf`, `-Inf`, `NaN`, else Swift's shortest form.
    static func formatted(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        return "\(value)"
    }
}
