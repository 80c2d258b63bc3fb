/// A logger in the shape of swift-log's: a value passed explicitly to whoever logs, seven levels, an
/// `@autoclosure` message that is not built below the level, and metadata for context.
///
/// Never put a token, a key or message text in a message or metadata: use a fingerprint.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case trace, debug, info, notice, warning, error, critical

        public init?(name: String) {
            guard let level = Self.allCases.first(where: { $0.description == name.lowercased() }) else {
                return nil
            }
            self = level
        }

        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public typealias Metadata = [String: String]

    public let label: String
    public var level: Level
    public var metadata: Metadata
    private let sink: any LogSink

    public init(label: String, level: Level = .info, metadata: Metadata = [:], sink: any LogSink) {
        self.label = label
        self.level = level
        self.metadata = metadata
        self.sink = sink
    }

    /// A logger for code that must not log (tests of pure parts).
    public static var disabled: Logger { Logger(label: "disabled", level: .critical, sink: DiscardingLogSink()) }

    /// The same sink and level under another label, e.g. one per module.
    public func child(label: String, metadata: Metadata = [:]) -> Logger {
        Logger(label: label, level: level, metadata: self.metadata.merging(metadata) { $1 }, sink: sink)
    }

    public func log(
        level: Level, _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        guard level >= self.level else { return }
        let extra = metadata()
        let merged = extra.isEmpty ? self.metadata : self.metadata.merging(extra) { $1 }
        sink.log(
            event: LogEvent(
                level: level, label: label, message: message(), metadata: merged,
                file: file, line: line))
    }

    public func trace(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .trace, message(), metadata: metadata(), file: file, line: line)
    }

    public func debug(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .debug, message(), metadata: metadata(), file: file, line: line)
    }

    public func info(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .info, message(), metadata: metadata(), file: file, line: line)
    }

    public func notice(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .notice, message(), metadata: metadata(), file: file, line: line)
    }

    public func warning(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .warning, message(), metadata: metadata(), file: file, line: line)
    }

    public func error(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .error, message(), metadata: metadata(), file: file, line: line)
    }

    public func critical(
        _ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        log(level: .critical, message(), metadata: metadata(), file: file, line: line)
    }
}

public struct LogEvent: Sendable, Equatable {
    public var level: Logger.Level
    public var label: String
    public var message: String
    public var metadata: Logger.Metadata
    public var file: String
    public var line: UInt

    /// One JSON object (for journald, Loki or ELK): the same fields as `formatted`, metadata as an
    /// object of strings, its keys sorted; `time` first when given.
    public func json(time: String? = nil) -> String {
        var writer = JSONObjectWriter()
        if let time { writer.add("time", time) }
        writer.add("level", level.description)
        writer.add("label", label)
        writer.add("message", message)
        if !metadata.isEmpty {
            var fields = JSONObjectWriter()
            for key in metadata.keys.sorted() { fields.add(key, "\(metadata[key]!)") }
            writer.addRaw("metadata", fields.finish())
        }
        return writer.finish()
    }

    /// One line: `LEVEL label: message key=value …`, metadata sorted so lines are stable.
    public var formatted: String {
        var line = "\(level.description.uppercased()) \(label): \(message)"
        for key in metadata.keys.sorted() {
            line += " \(key)=\(metadata[key]!)"
        }
        return line
    }
}

/// Where log events go. A backend implements one method.
public protocol LogSink: Sendable {
    func log(event: LogEvent)
}

public struct DiscardingLogSink: LogSink {
    public init() {}
    public func log(event: LogEvent) {}
}
