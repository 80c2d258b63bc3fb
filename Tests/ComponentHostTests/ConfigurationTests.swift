import Foundation
import Logging
import Testing

@testable import ComponentHost

@Suite struct ConfigurationTests {
    static let minimalEnvironment = [
        "APUSH_COMPONENT_JID": "apush.example.org",
        "APUSH_COMPONENT_SECRET": "s3cret",
        "APUSH_DOMAINS": "example.org",
    ]

    /// A program with a module that declares a section and a value of its own, as the push module does.
    static let schema = ConfigurationSchema(
        environmentPrefix: "APUSH_",
        modules: [
            ModuleConfiguration(
                keys: ["appServer", "push"], environment: [EnvironmentOverride("APP_SERVER", key: "appServer")])
        ])

    private func load(_ json: String?, environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration
    {
        guard let json else { return try Configuration.load(file: nil, environment: environment, schema: Self.schema) }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apush-config-\(UUID().uuidString).json")
        try! json.write(to: url, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: url) }
        return try Configuration.load(file: url.path, environment: environment, schema: Self.schema)
    }

    private func expectError(
        key: String, _ json: String?, environment: [String: String] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        do {
            let configuration = try load(json, environment: environment)
            Issue.record("expected an error at \(key), got \(configuration)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.key == key, "\(error)", sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix("configuration key '\(key)': "), sourceLocation: sourceLocation)
        }
    }

    @Test func defaultsFillEverythingButTheComponentAndDomains() throws {
        let configuration = try load(nil, environment: Self.minimalEnvironment)
        #expect(configuration.component.jid == "apush.example.org")
        #expect(configuration.component.secret == "s3cret")
        #expect(configuration.domains == ["example.org"])
        #expect(configuration.server == HostPort(host: "127.0.0.1", port: 5347))
        #expect(configuration.admins == [])
        #expect(configuration.logLevel == .info)
        #expect(configuration.logFormat == .text)
        #expect(configuration.http == nil)
        #expect(configuration.reconnect.initialMilliseconds == 50)
        #expect(configuration.reconnect.maximumMilliseconds == 1000)
        #expect(configuration.keepalive.intervalSeconds == 20)
        #expect(configuration.keepalive.timeoutSeconds == 15)
        #expect(configuration.moduleValues.isEmpty)
    }

    /// The example configuration's sections whose comments give their defaults show those defaults.
    @Test func theExampleConfigurationShowsTheDefaults() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/apush-component.example.json")
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: example)) as? [String: Any])
        func section<T: Decodable>(_ key: String, as type: T.Type) throws -> T {
            try JSONDecoder().decode(type, from: JSONSerialization.data(withJSONObject: try #require(file[key])))
        }
        #expect(try section("reconnect", as: Configuration.Reconnect.self) == Configuration.Reconnect())
        #expect(try section("keepalive", as: Configuration.Keepalive.self) == Configuration.Keepalive())
        let defaults = try load(nil, environment: Self.minimalEnvironment)
        #expect(
            file["log"] as? [String: String] == [
                "level": "\(defaults.logLevel)", "format": defaults.logFormat.rawValue,
            ])
    }

    static let fullFile = """
        {
          "// comment": "ignored",
          "component": {"jid": "apush.example.org", "secret": "from-file"},
          "server": "xmpp.internal:5275",
          "domains": ["example.org", "example.net"],
          "appServer": "push.example.com",
          "admins": ["boss@example.org"],
          "log": "debug",
          "http": "[::1]:8080",
          "reconnect": {"initialMs": 20, "maxMs": 500},
          "keepalive": {"intervalSeconds": 10, "timeoutSeconds": 5},
          "push": {"coalesceSeconds": 10}
        }
        """

    @Test func readsEveryKeyOfTheFile() throws {
        let configuration = try load(Self.fullFile)
        #expect(configuration.component.secret == "from-file")
        #expect(configuration.server == HostPort(host: "xmpp.internal", port: 5275))
        #expect(configuration.domains == ["example.org", "example.net"])
        #expect(configuration.moduleValues["appServer"] == Data(#""push.example.com""#.utf8))
        #expect(configuration.admins == ["boss@example.org"])
        #expect(configuration.logLevel == .debug)
        #expect(configuration.http == HostPort(host: "::1", port: 8080))
        #expect(configuration.http?.description == "[::1]:8080")
        #expect(configuration.reconnect.initialMilliseconds == 20)
        #expect(configuration.reconnect.maximumMilliseconds == 500)
        #expect(configuration.keepalive.intervalSeconds == 10)
        #expect(configuration.keepalive.timeoutSeconds == 5)
        let push = try #require(configuration.moduleValues["push"])
        #expect(try JSONSerialization.jsonObject(with: push) as? [String: Int] == ["coalesceSeconds": 10])
    }

    @Test func everyEnvironmentVariableOverridesTheFile() throws {
        let configuration = try load(
            Self.fullFile,
            environment: [
                "APUSH_COMPONENT_JID": "other.example.org",
                "APUSH_COMPONENT_SECRET": "from-env",
                "APUSH_SERVER": "127.0.0.1:5347",
                "APUSH_DOMAINS": " a.example , b.example ,",
                "APUSH_APP_SERVER": "apns.example.com",
                "APUSH_ADMINS": "x@a.example,y@b.example",
                "APUSH_LOG": "warning",
                "APUSH_HTTP": "0.0.0.0:9000",
            ])
        #expect(configuration.component.jid == "other.example.org")
        #expect(configuration.component.secret == "from-env")
        #expect(configuration.server == HostPort(host: "127.0.0.1", port: 5347))
        #expect(configuration.domains == ["a.example", "b.example"])
        #expect(
            configuration.moduleValues["appServer"] == Data(#""apns.example.com""#.utf8),
            "a module's variable sets its key")
        #expect(configuration.admins == ["x@a.example", "y@b.example"])
        #expect(configuration.logLevel == .warning)
        #expect(configuration.http == HostPort(host: "0.0.0.0", port: 9000))
        #expect(configuration.reconnect.initialMilliseconds == 20, "keys without a variable keep the file's value")
    }

    @Test func theEnvironmentTableNamesTheHostsVariablesThenEachModules() {
        #expect(
            Self.schema.environment.map(\.variable) == [
                "APUSH_COMPONENT_JID", "APUSH_COMPONENT_SECRET", "APUSH_SERVER", "APUSH_DOMAINS", "APUSH_ADMINS",
                "APUSH_LOG", "APUSH_LOG_FORMAT", "APUSH_HTTP", "APUSH_APP_SERVER",
            ])
        let other = ConfigurationSchema(environmentPrefix: "OTHER_", modules: [])
        #expect(other.environment.first?.variable == "OTHER_COMPONENT_JID", "the program names the prefix")
    }

    @Test func theLogIsALevelOrAnObjectWithItsFormat() throws {
        let base = #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "log": "#
        let short = try load(base + #""debug"}"#)
        #expect(short.logLevel == .debug && short.logFormat == .text)
        let object = try load(base + #"{"level": "notice", "format": "json"}}"#)
        #expect(object.logLevel == .notice && object.logFormat == .json)
        let overridden = try load(base + #""debug"}"#, environment: ["APUSH_LOG_FORMAT": "json"])
        #expect(overridden.logLevel == .debug && overridden.logFormat == .json, "the short form keeps its level")
        expectError(key: "log.format", base + #"{"format": "yaml"}}"#)
        expectError(key: "log.formats", base + #"{"formats": "json"}}"#)
        expectError(key: "log", base + #"5}"#)
    }

    @Test func aKeyNoModuleDeclaredIsUnknown() {
        let json =
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "push": {}}"#
        let hostOnly = ConfigurationSchema(environmentPrefix: "APUSH_", modules: [])
        #expect(throws: ConfigurationError(key: "push", reason: "unknown key (keys starting with // are comments)")) {
            try Configuration.load(json: Data(json.utf8), environment: [:], schema: hostOnly)
        }
    }

    @Test(arguments: [
        ("APUSH_COMPONENT_JID", "user@apush.example.org", "component.jid"),
        ("APUSH_COMPONENT_JID", "", "component.jid"),
        ("APUSH_COMPONENT_SECRET", "", "component.secret"),
        ("APUSH_SERVER", "no-port", "server"),
        ("APUSH_SERVER", "host:0", "server"),
        ("APUSH_SERVER", "host:70000", "server"),
        ("APUSH_DOMAINS", " , ", "domains"),
        ("APUSH_DOMAINS", "example.org,user@example.net", "domains[1]"),
        ("APUSH_ADMINS", "example.org", "admins[0]"),
        ("APUSH_ADMINS", "ok@example.org,boss@example.org/phone", "admins[1]"),
        ("APUSH_LOG", "loud", "log.level"),
        ("APUSH_LOG_FORMAT", "xml", "log.format"),
        ("APUSH_HTTP", "8080", "http"),
    ])
    func aBadEnvironmentValueNamesItsKey(variable: String, value: String, key: String) {
        expectError(key: key, nil, environment: Self.minimalEnvironment.merging([variable: value]) { $1 })
    }

    @Test(arguments: [
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "bogus": 1}"#,
            "bogus"
        ),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s", "secrets": "x"}, "domains": ["example.org"]}"#,
            "component.secrets"
        ),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "reconnect": {"initialMS": 5}}"#,
            "reconnect.initialMS"
        ),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "keepalive": {"interval": 5}}"#,
            "keepalive.interval"
        ),
    ])
    func unknownKeysAreRejected(json: String, key: String) {
        expectError(key: key, json)
    }

    @Test(arguments: [
        (#"{"domains": ["example.org"]}"#, "component"),
        (#"{"component": "apush.example.org", "domains": ["example.org"]}"#, "component"),
        (#"{"component": {"secret": "s"}, "domains": ["example.org"]}"#, "component.jid"),
        (#"{"component": {"jid": 5, "secret": "s"}, "domains": ["example.org"]}"#, "component.jid"),
        (#"{"component": {"jid": "apush.example.org"}, "domains": ["example.org"]}"#, "component.secret"),
        (#"{"component": {"jid": "apush.example.org", "secret": "s"}}"#, "domains"),
        (#"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": "example.org"}"#, "domains"),
        (#"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org", 3]}"#, "domains[1]"),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "reconnect": {"initialMs": "fast"}}"#,
            "reconnect.initialMs"
        ),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "reconnect": {"initialMs": 500, "maxMs": 100}}"#,
            "reconnect"
        ),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "keepalive": {"timeoutSeconds": 0}}"#,
            "keepalive"
        ),
        (
            #"{"component": {"jid": "apush.example.org", "secret": "s"}, "domains": ["example.org"], "keepalive": 30}"#,
            "keepalive"
        ),
        (#"["not an object"]"#, "(top level)"),
        (#"{"component": "#, "(file)"),
    ])
    func aBadFileValueNamesItsKey(json: String, key: String) {
        expectError(key: key, json)
    }

    @Test func anUnreadableFileNamesTheFile() {
        #expect(throws: ConfigurationError(key: "/no/such/file.json", reason: "cannot read the file")) {
            try Configuration.load(
                file: "/no/such/file.json", environment: Self.minimalEnvironment, schema: Self.schema)
        }
    }

    @Test(arguments: [
        ("example.org:5347", "example.org", 5347 as UInt16),
        ("[::1]:5347", "::1", 5347),
        ("127.0.0.1:1", "127.0.0.1", 1),
    ])
    func hostPortParses(text: String, host: String, port: UInt16) {
        #expect(HostPort(text) == HostPort(host: host, port: port))
    }

    @Test(arguments: ["", ":5347", "host:", "host", "host:0", "host:-1", "host:65536", "[]:5"])
    func hostPortRejects(text: String) {
        #expect(HostPort(text) == nil)
    }
}
