public import Foundation

/// A private Prosody (0.12 or 13.0) on loopback for tests and the demo: its own temporary directory,
/// config, data, logs and ports, run in the foreground and stopped by its PID. c2s has no TLS and allows
/// PLAIN.
public actor ProsodyServer {
    /// Which Prosody runs: Debian bookworm's, or the newer one unpacked beside it.
    public enum Release: Sendable, CustomStringConvertible {
        /// Debian bookworm's packages (`prosody`, and `prosody-modules` for mod_cloud_notify).
        case v0_12
        /// bookworm-backports' 13.0, unpacked by contrib/prosody/backports.sh (it has its own
        /// mod_cloud_notify).
        case v13

        public var description: String {
            switch self {
            case .v0_12: "Prosody 0.12"
            case .v13: "Prosody 13.0"
            }
        }

        /// Where its `prosody` and `prosodyctl` are, nil for the ones on the PATH.
        var directory: String? {
            switch self {
            case .v0_12: nil
            case .v13: "/opt/apush-backports/prosody-13/usr/bin"
            }
        }

        var installHint: String {
            switch self {
            case .v0_12: "apt-get install prosody prosody-modules"
            case .v13: "run contrib/prosody/backports.sh (as root; contrib/setup-debian.sh runs it)"
            }
        }

        /// The release's version as it states it (`prosody.version` beside its Lua code), e.g. "0.12.3";
        /// nil when the file is not there.
        public var version: String? {
            let file = directory.map { $0 + "/../lib/prosody/prosody.version" } ?? "/usr/lib/prosody/prosody.version"
            let text = try? String(contentsOfFile: file, encoding: .utf8)
            return text?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// The least severe level `prosody.log` keeps. Tests read the log at `debug`; an operator runs
    /// `info`, and debug logging (every stanza serialised) would be much of Prosody's work under load.
    public enum LogLevel: String, Sendable {
        case debug, info, warn, error
    }

    public static let defaultModules = [
        "roster", "saslauth", "disco", "ping", "carbons", "mam", "smacks", "cloud_notify",
    ]

    public nonisolated let release: Release
    public nonisolated let domain: String
    public nonisolated let componentJID: String
    public nonisolated let componentSecret: String
    public nonisolated let c2sPort: Int
    public nonisolated let componentPort: Int
    /// Holds `prosody.cfg.lua`, `data/`, the logs and the pidfile.
    public nonisolated let baseDirectory: URL
    public nonisolated let configURL: URL
    private var process: ServerProcess?

    /// Writes the configuration into a fresh temporary directory; nothing runs until `start()`.
    /// - Parameters:
    ///   - modules: `modules_enabled`; to add some, pass `ProsodyServer.defaultModules + [...]`.
    ///   - extraGlobalConfig: Lua lines placed before the VirtualHost.
    ///   - hostConfig: Lua lines inside the VirtualHost section.
    ///   - extraComponentConfig: Lua lines inside the Component section.
    ///   - pluginPaths: directories searched for modules before Prosody's own.
    ///   - otherComponents: more components (JID → secret), e.g. a stand-in App Server.
    ///   - release: which Prosody.
    ///   - logLevel: the least severe level written to `prosody.log` (errors also go to `prosody.err`).
    public init(
        release: Release = .v0_12,
        logLevel: LogLevel = .debug,
        domain: String = "localhost",
        componentJID: String,
        componentSecret: String,
        modules: [String] = ProsodyServer.defaultModules,
        extraGlobalConfig: String = "",
        hostConfig: String = "",
        extraComponentConfig: String = "",
        pluginPaths: [String] = [],
        otherComponents: [String: String] = [:]
    ) throws {
        self.release = release
        self.domain = domain
        self.componentJID = componentJID
        self.componentSecret = componentSecret
        let ports = try TestPorts.next(2)
        c2sPort = ports[0]
        componentPort = ports[1]
        baseDirectory = try ServerDirectory.create(prefix: "prosody")
        configURL = baseDirectory.appendingPathComponent("prosody.cfg.lua")
        // An existing (empty) certificate directory spares an error in every log.
        for directory in ["data", "certs"] {
            try FileManager.default.createDirectory(
                at: baseDirectory.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        let base = baseDirectory.path
        let config = """
            run_as_root = true -- as root Prosody otherwise refuses to start and hangs
            pidfile = \(Self.lua(base + "/prosody.pid"))
            data_path = \(Self.lua(base + "/data"))
            certificates = \(Self.lua(base + "/certs"))
            plugin_paths = \(Self.lua(pluginPaths))
            log = { \(logLevel.rawValue) = \(Self.lua(base + "/prosody.log")); error = \(Self.lua(base + "/prosody.err")) }
            interfaces = { "127.0.0.1" }
            c2s_ports = { \(c2sPort) }
            component_interfaces = { "127.0.0.1" }
            component_ports = { \(componentPort) }
            modules_enabled = \(Self.lua(modules))
            modules_disabled = { "s2s"; "s2s_auth_certs" }
            authentication = "internal_hashed"
            storage = "internal"
            c2s_require_encryption = false
            allow_unencrypted_plain_auth = true
            push_notification_with_sender = true
            \(extraGlobalConfig)

            VirtualHost \(Self.lua(domain))
            \(hostConfig)

            Component \(Self.lua(componentJID))
                component_secret = \(Self.lua(componentSecret))
            \(extraComponentConfig)
            \(otherComponents.sorted { $0.key < $1.key }.map { jid, secret in
                "Component \(Self.lua(jid))\n    component_secret = \(Self.lua(secret))"
            }.joined(separator: "\n"))

            """
        try config.write(to: configURL, atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(at: baseDirectory)
    }

    /// The PID of the running server, nil when stopped.
    public var pid: Int32? { process?.pid }

    /// Starts `prosody -F` and returns once the c2s and component ports accept connections.
    public func start() async throws {
        guard process == nil else { return }
        let executable = try locate("prosody")
        let server = try ServerProcess(
            name: "prosody",
            executable: executable,
            arguments: ["--config", configURL.path, "-F"],
            workingDirectory: baseDirectory,
            outputURL: baseDirectory.appendingPathComponent("prosody.stdout"))
        do {
            for port in [c2sPort, componentPort] {
                try await server.waitForPort(port: port, timeout: .seconds(20))
            }
        } catch let error as ServerProcessError {
            await server.stop()
            throw ServerProcessError(error.code, error.message + "\n" + logContents(lastLines: 30))
        }
        process = server
    }

    /// SIGTERM (SIGKILL after 10 s) and waits until the process is gone. Data and ports are kept.
    public func stop() async {
        await process?.stop()
        process = nil
    }

    /// Stops and starts again on the same ports with the same data.
    public func restart() async throws {
        await stop()
        try await start()
    }

    /// Creates the account `user@domain`; works whether or not the server runs.
    /// Creates an account on `domain` (another than the VirtualHost's must be configured).
    public func register(user: String, password: String, domain: String) async throws {
        let prosodyctl = try locate("prosodyctl")
        let result = try await ExternalCommand.run(
            prosodyctl, ["--config", configURL.path, "register", user, domain, password],
            workingDirectory: baseDirectory)
        guard result.status == 0 else {
            throw ServerProcessError(
                .commandFailed, "prosodyctl register \(user) exited \(result.status): \(result.output)")
        }
    }

    /// Deletes the account `user@domain` from the store behind the server's back, as with an account
    /// deleted while a module that reports deletions was not loaded: its file goes from the data
    /// directory (storage "internal"), and the running server's modules hear nothing of it. (No
    /// `prosodyctl deluser`: since 13.0 it asks the running server, whose modules hear of it.)
    public func deleteFromStore(user: String, domain: String) async throws {
        let account = baseDirectory.appendingPathComponent("data")
            .appendingPathComponent(Self.storeName(domain)).appendingPathComponent("accounts")
            .appendingPathComponent(Self.storeName(user) + ".dat")
        do {
            try FileManager.default.removeItem(at: account)
        } catch {
            throw ServerProcessError(.commandFailed, "deleting \(user)@\(domain) (\(account.path)): \(error)")
        }
    }

    /// A host or user as Prosody's file store names it (util.datamanager's encode): every byte but an
    /// ASCII letter or digit as `%xx`.
    static func storeName(_ string: String) -> String {
        string.utf8.map { byte in
            let character = Character(Unicode.Scalar(byte))
            return byte < 0x80 && (character.isLetter || character.isNumber)
                ? String(character) : "%" + String(format: "%02x", byte)
        }.joined()
    }

    /// The release's own `prosody` or `prosodyctl`.
    private nonisolated func locate(_ name: String) throws -> URL {
        try Self.locate(name, release: release, in: release.directory)
    }

    /// `name` in `directory`, or on the PATH without one; a missing one names what installs it.
    static func locate(_ name: String, release: Release, in directory: String?) throws -> URL {
        guard let directory else {
            return try ExternalCommand.locate(name, installHint: release.installHint)
        }
        let executable = URL(fileURLWithPath: directory).appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw ServerProcessError(
                .notInstalled, "\(release) is not unpacked (no \(executable.path)): \(release.installHint)")
        }
        return executable
    }

    /// Prosody's logs and console output (each cut to its last `lastLines` lines), for failure diagnostics.
    public func logContents(lastLines: Int?) -> String {
        ServerDirectory.contents(
            of: ["prosody.stdout", "prosody.err", "prosody.log"], in: baseDirectory, lastLines: lastLines)
    }

    private static func lua(_ string: String) -> String {
        ServerDirectory.quoted(string)
    }

    private static func lua(_ strings: [String]) -> String {
        "{ " + strings.map(ServerDirectory.quoted).joined(separator: "; ") + " }"
    }
}
