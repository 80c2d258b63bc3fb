public import Foundation
public import Logging
import XMPP

/// The component's settings: one JSON file, every key overridable from the environment, so it runs in
/// a container with no file at all. `config/apush-component.example.json` documents each key.
public struct Configuration: Sendable, Equatable {
    public struct Component: Sendable, Equatable, Decodable {
        /// The component's JID, e.g. `apush.example.org`.
        public var jid: String
        public var secret: String
    }

    public struct Reconnect: Sendable, Equatable, Decodable {
        public var initialMilliseconds = Int(Backoff().initial / .milliseconds(1))
        public var maximumMilliseconds = Int(Backoff().maximum / .milliseconds(1))

        enum CodingKeys: String, CodingKey {
            case initialMilliseconds = "initialMs"
            case maximumMilliseconds = "maxMs"
        }

        public init() {}

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Reconnect()
            initialMilliseconds =
                try container.decodeIfPresent(Int.self, forKey: .initialMilliseconds)
                ?? defaults.initialMilliseconds
            maximumMilliseconds =
                try container.decodeIfPresent(Int.self, forKey: .maximumMilliseconds)
                ?? defaults.maximumMilliseconds
        }
    }

    public struct Keepalive: Sendable, Equatable, Decodable {
        public var intervalSeconds = Int(ComponentConnectionSettings.defaultKeepaliveInterval.components.seconds)
        public var timeoutSeconds = Int(ComponentConnectionSettings.defaultKeepaliveTimeout.components.seconds)

        enum CodingKeys: String, CodingKey { case intervalSeconds, timeoutSeconds }

        public init() {}

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Keepalive()
            intervalSeconds =
                try container.decodeIfPresent(Int.self, forKey: .intervalSeconds) ?? defaults.intervalSeconds
            timeoutSeconds = try container.decodeIfPresent(Int.self, forKey: .timeoutSeconds) ?? defaults.timeoutSeconds
        }
    }

    public var component: Component
    /// The server's component port, `host:port`.
    public var server: HostPort
    /// The server domains this component serves: stanzas for its modules are accepted only from them.
    public var domains: [String]
    public var admins: [String]
    public var logLevel: Logger.Level
    /// `log.format`: text lines, or one JSON object a line.
    public var logFormat: LogFormat
    /// Where a health endpoint listens, if any.
    public var http: HostPort?
    public var reconnect: Reconnect
    public var keepalive: Keepalive
    /// The values of the keys the modules declared (`ModuleConfiguration`), as JSON, for each module to
    /// decode: only those present.
    public var moduleValues: [String: Data]

    /// The host's own environment variables (named without the program's prefix).
    public static let hostEnvironment: [EnvironmentOverride] = [
        EnvironmentOverride("COMPONENT_JID", key: "component.jid"),
        EnvironmentOverride("COMPONENT_SECRET", key: "component.secret"),
        EnvironmentOverride("SERVER", key: "server"),
        EnvironmentOverride("DOMAINS", key: "domains", isList: true),
        EnvironmentOverride("ADMINS", key: "admins", isList: true),
        EnvironmentOverride("LOG", key: "log.level"),
        EnvironmentOverride("LOG_FORMAT", key: "log.format"),
        EnvironmentOverride("HTTP", key: "http"),
    ]

    /// Reads the file (if any), applies the environment over it, and validates every value of the host;
    /// the modules' values are checked by the modules.
    public static func load(file: String?, environment: [String: String], schema: ConfigurationSchema)
        throws(ConfigurationError) -> Configuration
    {
        var json: Data?
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConfigurationError(key: file, reason: "cannot read the file")
            }
            json = data
        }
        return try load(json: json, environment: environment, schema: schema)
    }

    /// The same from the file's contents (nil: no file).
    static func load(json: Data?, environment: [String: String], schema: ConfigurationSchema)
        throws(ConfigurationError) -> Configuration
    {
        var tree: [String: Any] = [:]
        if let data = json {
            do {
                guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw ConfigurationError(key: "(top level)", reason: "must be a JSON object")
                }
                tree = object
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(key: "(file)", reason: "not valid JSON: \(Self.describe(error))")
            }
        }
        // `"log": "debug"` is the short form of `"log": {"level": "debug"}`.
        if let level = tree["log"] as? String { tree["log"] = ["level": level] }
        for entry in schema.environment {
            guard let value = environment[entry.variable] else { continue }
            let parsed: Any =
                entry.isList
                ? value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                : value
            set(parsed, at: entry.key.split(separator: ".").map(String.init), in: &tree)
        }
        return try ConfigurationReader(tree: tree, moduleKeys: schema.moduleKeys).configuration()
    }

    private static func set(_ value: Any, at path: [String], in tree: inout [String: Any]) {
        guard let first = path.first else { return }
        if path.count == 1 {
            tree[first] = value
        } else {
            var child = tree[first] as? [String: Any] ?? [:]
            set(value, at: Array(path.dropFirst()), in: &child)
            tree[first] = child
        }
    }

    static func describe(_ error: any Error) -> String {
        let nsError = error as NSError
        return (nsError.userInfo["NSDebugDescription"] as? String) ?? "\(error)"
    }
}

/// `host:port`, parsed and checked.
public struct HostPort: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A bad configuration: which key, and why. Printed at start, before anything connects.
public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
    public var key: String
    public var reason: String

    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    public var description: String { "configuration key '\(key)': \(reason)" }
}

extension Configuration {
    /// Decodes one section (the host's own, or a module's from `moduleValues`), turning a
    /// DecodingError into the full key path and the reason.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, section: String)
        throws(ConfigurationError) -> T
    {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw ConfigurationError(decoding: error, section: section)
        } catch {
            throw ConfigurationError(key: section, reason: "\(error)")
        }
    }
}

extension Configuration {
    /// A module's key that holds a string: nil when absent, an error when it is not a string or is empty.
    public func moduleString(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = moduleValues[key] else { return nil }
        guard let string = (try? JSONSerialization.jsonObject(with: value, options: .fragmentsAllowed)) as? String
        else { throw ConfigurationError(key: key, reason: "must be a string") }
        guard !string.isEmpty else { throw ConfigurationError(key: key, reason: "must not be empty") }
        return string
    }
}
