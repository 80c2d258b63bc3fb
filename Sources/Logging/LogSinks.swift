import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// How a log line is written: `LEVEL label: message` text, or one JSON object a line.
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}

/// Writes each event as one line on standard error with an ISO-8601 UTC time: prefixed to the text, or
/// the first field of the JSON object.
public struct StandardErrorLogSink: LogSink {
    public let format: LogFormat

    public init(format: LogFormat = .text) {
        self.format = format
    }

    public func log(event: LogEvent) {
        // One write(2) per line keeps lines whole when several threads log at once.
        var bytes = Array(Self.line(for: event, format: format).utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    /// The event as one line. A message must stay one line, whatever a peer put in it: in text every
    /// line break counts, including CR LF (one `Character`) and the Unicode separators; JSON escapes
    /// control characters, and U+2028/U+2029 are kept out of it too.
    static func line(for event: LogEvent, format: LogFormat = .text) -> String {
        switch format {
        case .text:
            String("\(timestamp()) \(event.formatted)".map { $0.isNewline ? " " : $0 }) + "\n"
        case .json:
            String(event.json(time: timestamp()).map { $0.isNewline ? " " : $0 }) + "\n"
        }
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
            + "\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }
}

/// Keeps events in memory, for tests that check what was (and was not) logged.
public final class InMemoryLogSink: LogSink {
    private let storage = Mutex<[LogEvent]>([])

    public init() {}

    public func log(event: LogEvent) {
        storage.withLock { $0.append(event) }
    }

    public var events: [LogEvent] { storage.withLock { $0 } }

    /// Every line, formatted, joined: handy for "this secret never appears" checks.
    public var text: String { events.map(\.formatted).joined(separator: "\n") }
}
