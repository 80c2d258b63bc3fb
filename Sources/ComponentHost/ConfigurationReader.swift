import Foundation
import Logging
import XMPP

/// Turns the merged JSON tree into a `Configuration`, naming the key of the first bad value.
struct ConfigurationReader {
    let tree: [String: Any]
    /// The top-level keys the modules declared, passed on undecoded.
    let moduleKeys: [String]

    static let knownKeys: Set<String> = [
        "component", "server", "domains", "admins", "log", "http", "reconnect",
        "keepalive",
    ]
    /// The keys of the host's own nested sections: a misspelt one (`initialMS`) would otherwise be
    /// ignored silently and its default used.
    static let sectionKeys: [String: Set<String>] = [
        "reconnect": ["initialMs", "maxMs"],
        "log": ["level", "format"],
        "keepalive": ["intervalSeconds", "timeoutSeconds"],
    ]
    func configuration() throws(ConfigurationError) -> Configuration {
        try Configuration.checkKeys(tree, allowed: Self.knownKeys.union(moduleKeys), path: "")
        let component = try object("component")
        try Configuration.checkKeys(component, allowed: ["jid", "secret"], path: "component")
        for (key, allowed) in Self.sectionKeys {
            if let section = tree[key] as? [String: Any] {
                try Configuration.checkKeys(section, allowed: allowed, path: key)
            }
        }
        let jid = try string("component.jid", component["jid"])
        do {
            let parsed = try JID(jid)
            guard parsed.isDomainOnly else {
                throw ConfigurationError(
                    key: "component.jid", reason: "must be a bare domain such as apush.example.org")
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(key: "component.jid", reason: "not a valid JID: \(error)")
        }
        let secret = try string("component.secret", component["secret"])
        let server = try hostPort("server", tree["server"] ?? "127.0.0.1:5347")

        let domains = try stringList("domains", tree["domains"])
        guard !domains.isEmpty else { throw ConfigurationError(key: "domains", reason: "name at least one domain") }
        for (index, domain) in domains.enumerated() {
            guard let parsed = try? JID(domain), parsed.isDomainOnly else {
                throw ConfigurationError(key: "domains[\(index)]", reason: "'\(domain)' is not a domain")
            }
        }
        let admins =
            try tree["admins"].map { value throws(ConfigurationError) in try stringList("admins", value) } ?? []
        for (index, admin) in admins.enumerated() {
            guard let parsed = try? JID(admin), parsed.localpart != nil, parsed.resourcepart == nil else {
                throw ConfigurationError(key: "admins[\(index)]", reason: "'\(admin)' is not a bare user JID")
            }
        }
        let log =
            try tree["log"].map { value throws(ConfigurationError) -> [String: Any] in
                guard let object = value as? [String: Any] else {
                    throw ConfigurationError(key: "log", reason: "must be a level or an object with level and format")
                }
                return object
            } ?? [:]
        let levelName =
            try log["level"].map { value throws(ConfigurationError) in try string("log.level", value) } ?? "info"
        guard let level = Logger.Level(name: levelName) else {
            let names = Logger.Level.allCases.map(\.description).joined(separator: ", ")
            throw ConfigurationError(key: "log.level", reason: "'\(levelName)' is not one of \(names)")
        }
        let formatName =
            try log["format"].map { value throws(ConfigurationError) in try string("log.format", value) }
            ?? LogFormat.text.rawValue
        guard let format = LogFormat(rawValue: formatName) else {
            let names = LogFormat.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(key: "log.format", reason: "'\(formatName)' is not one of \(names)")
        }
        let http = try tree["http"].map { value throws(ConfigurationError) in try hostPort("http", value) }

        let reconnect = try decode(Configuration.Reconnect.self, "reconnect")
        guard reconnect.initialMilliseconds > 0, reconnect.maximumMilliseconds >= reconnect.initialMilliseconds else {
            throw ConfigurationError(key: "reconnect", reason: "need 0 < initialMs <= maxMs")
        }
        let keepalive = try decode(Configuration.Keepalive.self, "keepalive")
        guard keepalive.intervalSeconds >= 1, keepalive.timeoutSeconds >= 1 else {
            throw ConfigurationError(key: "keepalive", reason: "intervalSeconds and timeoutSeconds must be at least 1")
        }

        var moduleValues: [String: Data] = [:]
        for key in moduleKeys {
            if let value = tree[key] {
                guard let data = try? JSONSerialization.data(withJSONObject: value, options: .fragmentsAllowed) else {
                    throw ConfigurationError(key: key, reason: "is not a JSON value")
                }
                moduleValues[key] = data
            }
        }
        return Configuration(
            component: .init(jid: jid, secret: secret), server: server, domains: domains,
            admins: admins, logLevel: level, logFormat: format,
            http: http,
            reconnect: reconnect, keepalive: keepalive, moduleValues: moduleValues)
    }

    private func object(_ key: String) throws(ConfigurationError) -> [String: Any] {
        guard let value = tree[key] else { throw ConfigurationError(key: key, reason: "missing") }
        guard let object = value as? [String: Any] else {
            throw ConfigurationError(key: key, reason: "must be an object")
        }
        return object
    }

    private func string(_ key: String, _ value: Any?) throws(ConfigurationError) -> String {
        guard let value else { throw ConfigurationError(key: key, reason: "missing") }
        guard let text = value as? String else { throw ConfigurationError(key: key, reason: "must be a string") }
        guard !text.isEmpty else { throw ConfigurationError(key: key, reason: "must not be empty") }
        return text
    }

    private func stringList(_ key: String, _ value: Any?) throws(ConfigurationError) -> [String] {
        guard let value else { throw ConfigurationError(key: key, reason: "missing") }
        guard let list = value as? [Any] else {
            throw ConfigurationError(key: key, reason: "must be a list of strings")
        }
        return try list.enumerated().map { (index, item) throws(ConfigurationError) in
            try string("\(key)[\(index)]", item)
        }
    }

    private func hostPort(_ key: String, _ value: Any) throws(ConfigurationError) -> HostPort {
        let text = try string(key, value)
        guard let parsed = HostPort(text) else {
            throw ConfigurationError(key: key, reason: "'\(text)' is not host:port")
        }
        return parsed
    }

    private func decode<T: Decodable>(_ type: T.Type, _ key: String) throws(ConfigurationError) -> T {
        let value = tree[key] ?? [String: Any]()
        guard value is [String: Any] else { throw ConfigurationError(key: key, reason: "must be an object") }
        return try Self.decodeSection(type, from: value, key: key)
    }

    static func decodeSection<T: Decodable>(_ type: T.Type, from value: Any, key: String) throws(ConfigurationError)
        -> T
    {
        let data: Data
        do {
            data = try JSONSerialization.data(withJSONObject: value)
        } catch {
            throw ConfigurationError(key: key, reason: "\(error)")
        }
        return try Configuration.decode(type, from: data, section: key)
    }
}

extension Configuration {
    /// A misspelt key is an error, not a silently ignored setting. Keys starting with `//` are comments.
    public static func checkKeys(_ object: [String: Any], allowed: Set<String>, path: String)
        throws(ConfigurationError)
    {
        for key in object.keys.sorted() where !allowed.contains(key) && !key.hasPrefix("//") {
            throw ConfigurationError(
                key: path.isEmpty ? key : "\(path).\(key)",
                reason: "unknown key (keys starting with // are comments)")
        }
    }
}

extension ConfigurationError {
    /// Names the full key path of a DecodingError, e.g. `push.coalesceSeconds: expected a number`.
    public init(decoding error: DecodingError, section: String) {
        func path(_ codingPath: [any CodingKey]) -> String {
            ([section] + codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue })
                .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .typeMismatch(let type, let context):
            self.init(key: path(context.codingPath), reason: "expected \(Self.name(type))")
        case .valueNotFound(let type, let context):
            self.init(key: path(context.codingPath), reason: "expected \(Self.name(type)), found null")
        case .keyNotFound(let key, let context):
            self.init(key: path(context.codingPath + [key]), reason: "missing")
        case .dataCorrupted(let context):
            self.init(key: path(context.codingPath), reason: context.debugDescription)
        @unknown default:
            self.init(key: section, reason: "\(error)")
        }
    }

    private static func name(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type, is Double.Type: "a number"
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        default: "\(type)"
        }
    }
}
