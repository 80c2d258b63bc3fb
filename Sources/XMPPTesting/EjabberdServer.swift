public import Foundation

/// A private ejabberd 23.01 on loopback for tests and the demo: its own temporary directory, Erlang node
/// name, cookie and distribution port, run with `ejabberdctl foreground` and stopped by its PID.
/// Debian's `ejabberdctl` only runs as root (or as the ejabberd user); it is told to stay the current user.
public actor EjabberdServer {
    static let installHint = "apt-get install ejabberd"

    public nonisolated let domain: String
    public nonisolated let componentJID: String
    public nonisolated let componentSecret: String
    public nonisolated let c2sPort: Int
    public nonisolated let componentPort: Int
    /// The Erlang distribution port that `ejabberdctl` commands reach the node on (no epmd runs).
    public nonisolated let distributionPort: Int
    /// The component port of each of `otherComponents` (each has a listener of its own).
    public nonisolated let otherComponentPorts: [String: Int]
    public nonisolated let nodeName: String
    /// Holds `ejabberd.yml`, `ejabberdctl.cfg`, `spool/` (Mnesia), `logs/` and the pidfile.
    public nonisolated let baseDirectory: URL
    private var process: ServerProcess?

    /// Writes the configuration into a fresh temporary directory; nothing runs until `start()`.
    /// - Parameters:
    ///   - extraModulesConfig: YAML lines added inside `modules:` (indented by the caller as `  mod_x: {}`).
    ///   - extraConfig: YAML lines added at the top level.
    ///   - codePaths: directories of `.beam` files (e.g. a bridge module) added to the code path.
    ///   - otherComponents: more components (JID → secret) on the same port, e.g. a stand-in App Server.
    public init(
        domain: String = "localhost",
        componentJID: String,
        componentSecret: String,
        otherComponents: [String: String] = [:],
        extraModulesConfig: String = "",
        extraConfig: String = "",
        codePaths: [String] = []
    ) throws {
        self.domain = domain
        self.componentJID = componentJID
        self.componentSecret = componentSecret
        let ports = try TestPorts.next(3 + otherComponents.count)
        c2sPort = ports[0]
        componentPort = ports[1]
        distributionPort = ports[2]
        otherComponentPorts = Dictionary(uniqueKeysWithValues: zip(otherComponents.keys.sorted(), ports.dropFirst(3)))
        let unique = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        nodeName = "apush\(unique.prefix(10))@localhost"
        baseDirectory = try ServerDirectory.create(prefix: "ejabberd")
        let base = baseDirectory.path
        for directory in ["spool", "logs"] {
            try FileManager.default.createDirectory(
                at: baseDirectory.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        let codePathOptions = codePaths.map { " -pa \($0)" }.joined()
        let controlConfig = """
            ERLANG_NODE=\(nodeName)
            ERL_OPTIONS="-setcookie \(unique)\(codePathOptions)"
            ERL_DIST_PORT=\(distributionPort)
            INET_DIST_INTERFACE=127.0.0.1
            EXEC_CMD=as_current_user
            SPOOL_DIR=\(base)/spool
            LOGS_DIR=\(base)/logs
            EJABBERD_PID_PATH=\(base)/ejabberd.pid

            """
        let quote = ServerDirectory.quoted
        let config = """
            hosts: [\(quote(domain))]
            loglevel: info
            auth_password_format: plain
            listen:
              - port: \(c2sPort)
                ip: "127.0.0.1"
                module: ejabberd_c2s
                starttls: false
              - port: \(componentPort)
                ip: "127.0.0.1"
                module: ejabberd_service
                hosts:
                  \(quote(componentJID)):
                    password: \(quote(componentSecret))
            \(otherComponents.sorted { $0.key < $1.key }.map { jid, secret in
                // A listener of its own: ejabberd routes every host of a listener to each connection on it.
                """
                  - port: \(otherComponentPorts[jid]!)
                    ip: "127.0.0.1"
                    module: ejabberd_service
                    hosts:
                      \(quote(jid)):
                        password: \(quote(secret))
                """
            }.joined(separator: "\n"))
            modules:
              mod_disco: {}
              mod_roster: {}
              mod_ping: {}
              mod_caps: {}
              mod_carboncopy: {}
              mod_stream_mgmt: {}
              mod_offline: {}
              mod_mam: {db_type: mnesia}
              mod_push: {include_sender: true}
            \(extraModulesConfig)
            \(extraConfig)

            """
        try controlConfig.write(to: baseDirectory.appendingPathComponent("ejabberdctl.cfg"), atomically: true, encoding: .utf8)
        try config.write(to: baseDirectory.appendingPathComponent("ejabberd.yml"), atomically: true, encoding: .utf8)
        // ejabberdctl points Erlang at CONFIG_DIR/inetrc and logs an error when it is missing.
        try "".write(to: baseDirectory.appendingPathComponent("inetrc"), atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(at: baseDirectory)
    }

    /// The PID of the running `ejabberdctl foreground` (the Erlang VM runs in its process group), nil when stopped.
    public var pid: Int32? { process?.pid }

    /// Starts the node, waits for the c2s and component ports, then for `ejabberdctl status` to report it started.
    public func start() async throws {
        guard process == nil else { return }
        let ejabberdctl = try ExternalCommand.locate("ejabberdctl", installHint: Self.installHint)
        let server = try ServerProcess(
            name: "ejabberd",
            executable: ejabberdctl,
            arguments: controlArguments + ["foreground"],
            workingDirectory: baseDirectory,
            outputURL: baseDirectory.appendingPathComponent("ejabberd.stdout"))
        process = server
        do {
            for port in [c2sPort, componentPort] {
                try await server.waitForPort(port: port, timeout: .seconds(60))
            }
            try await waitForStartedStatus(server)
        } catch let error as ServerProcessError {
            await stop()
            throw ServerProcessError(error.code, error.message + "\n" + logContents(lastLines: 30))
        }
    }

    /// SIGTERM (SIGKILL after 15 s) to the node's process group and waits until it is gone. Data and ports are kept.
    public func stop() async {
        await process?.stop(gracePeriod: .seconds(15))
        process = nil
    }

    /// Stops (waiting for the old node to exit) and starts again on the same ports with the same Mnesia data.
    public func restart() async throws {
        await stop()
        try await start()
    }

    /// Creates the account `user@domain` through the running node.
    public func register(user: String, password: String) async throws {
        guard process != nil else {
            throw ServerProcessError(.notRunning, "ejabberd must be running to register \(user)")
        }
        let result = try await control(["register", user, domain, password])
        guard result.status == 0 else {
            throw ServerProcessError(.commandFailed, "ejabberdctl register \(user) exited \(result.status): \(result.output)")
        }
    }

    /// ejabberd's logs and console output (each cut to its last `lastLines` lines), for failure diagnostics.
    public func logContents(lastLines: Int?) -> String {
        ServerDirectory.contents(
            of: ["ejabberd.stdout", "logs/error.log", "logs/ejabberd.log"], in: baseDirectory, lastLines: lastLines)
    }

    private var controlArguments: [String] {
        let base = baseDirectory.path
        return ["--config-dir", base, "--spool", base + "/spool", "--logs", base + "/logs"]
    }

    private func control(_ arguments: [String]) async throws -> ExternalCommand.Result {
        let ejabberdctl = try ExternalCommand.locate("ejabberdctl", installHint: Self.installHint)
        return try await ExternalCommand.run(ejabberdctl, controlArguments + arguments, workingDirectory: baseDirectory)
    }

    /// The listeners open before every module has started; `status` exits 0 only once the node is "started".
    private func waitForStartedStatus(_ server: ServerProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let result = try await control(["status"])
            if result.status == 0 { return }
            guard await server.isRunning else {
                throw ServerProcessError(.exitedEarly, "ejabberd (pid \(server.pid)) exited during startup")
            }
            guard ContinuousClock.now < deadline else {
                throw ServerProcessError(.portTimeout, "ejabberdctl status still exits \(result.status): \(result.output)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
