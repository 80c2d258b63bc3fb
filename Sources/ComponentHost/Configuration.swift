public import Foundation
public import Logging

/// The component's settings: one JSON file, every key overridable from the environment, so it runs in
/// a container with no file at all. `config/apush-component.example.json` documents each key.
public struct Configuration: Sendable, Equatable {
    public struct Component: Sendable, Equatable, Decodable {
        /// The component's JID, e.g. `apush.example.org`.
        public var jid: String
        public var secret: String
    }

    public struct Reconnect: Sendable, Equatable, Decodable {
        public var initialMilliseconds: Int = 50
        public var maximumMilliseconds: Int = 1000

        enum CodingKeys: String, CodingKey { case initialMilliseconds = "initialMs", maximumMilliseconds = "maxMs" }

        public init() {}

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Reconnect()
            initialMilliseconds = try container.decodeIfPresent(Int.self, forKey: .initialMilliseconds)
                ?? defaults.initialMilliseconds
            maximumMilliseconds = try container.decodeIfPresent(Int.self, forKey: .maximumMilliseconds)
                ?? defaults.maximumMilliseconds
        }
    }

    public struct Keepalive: Sendable, Equatable, Decodable {
        /// Worst case, a dead link is noticed within interval + interval/2 + timeout = 45 s.
        public var intervalSeconds: Int = 20
        public var timeoutSeconds: Int = 15

        enum CodingKeys: String, CodingKey { case intervalSeconds, timeoutSeconds }

        public init() {}

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Keepalive()
            intervalSeconds = try container.decodeIfPresent(Int.self, forKey: .intervalSeconds) ?? defaults.intervalSeconds
            timeoutSeconds = try container.decodeIfPresent(Int.self, forKey: .timeoutSeconds) ?? defaults.timeoutSeconds
        }
    }

    public var component: Component
    /// The server's component port, `host:port`.
    public var server: HostPort
    /// The server domains this component serves: publishes and commands are accepted only from them.
    public var domains: [String]
    /// The App Server's JID (the XEP-0357 push service upstream).
    public var appServer: String?
    /// The SQLite database.
    public var store: String
    public var admins: [String]
    public var logLevel: Logger.Level
    /// Where a health endpoint listens, if any.
    public var http: HostPort?
    public var reconnect: Reconnect
    public var keepalive: Keepalive
    /// The module's own section (`push`), handed over raw for the module to decode.
    public var moduleSections: [String: Data]

    /// Environment variables and the key each one overrides: a stable interface for operators.
    public static let environmentKeys: [(variable: String, key: String, isList: Bool)] = [
        ("APUSH_COMPONENT_JID", "component.jid", false),
        ("APUSH_COMPONENT_SECRET", "component.secret", false),
        ("APUSH_SERVER", "server", false),
        ("APUSH_DOMAINS", "domains", true),
        ("APUSH_APP_SERVER", "appServer", false),
        ("APUSH_STORE", "store", false),
        ("APUSH_ADMINS", "admins", true),
        ("APUSH_LOG", "log", false),
        ("APUSH_HTTP", "http", false),
    ]

    /// Reads the file (if any), applies the environment over it, and validates every value.
    public static func load(file: String?, environment: [String: String]) throws(ConfigurationError) -> Configuration {
        var json: Data?
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConfigurationError(key: file, reason: "cannot read the file")
            }
            json = data
        }
        return try load(json: json, environment: environment)
    }

    /// The same from the file's contents (nil: no file).
    static func load(json: Data?, environment: [String: String]) throws(ConfigurationError) -> Configuration {
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
        for entry in environmentKeys {
            guard let value = environment[entry.variable] else { continue }
            let parsed: Any = entry.isList
                ? value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                : value
            set(parsed, at: entry.key.split(separator: ".").map(String.init), in: &tree)
        }
        return try ConfigurationReader(tree: tree).configuration()
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
    /// Decodes one section (the host's own, or a module's from `moduleSections`), turning a
    /// DecodingError into the full key path and the reason.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data, section: String)
        throws(ConfigurationError) -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw ConfigurationError(decoding: error, section: section)
        } catch {
            throw ConfigurationError(key: section, reason: "\(error)")
        }
    }
}
