public import Foundation

/// A private ejabberd (23.01, or 24.12) on loopback for tests and the demo: its own temporary directory,
/// Erlang node name, cookie and distribution port, run with `ejabberdctl foreground` and stopped by its PID.
/// Debian's `ejabberdctl` only runs as root (or as the ejabberd user); it is told to stay the current user.
public actor EjabberdServer {
    /// The ejabberd releases the project supports.
    public enum Release: String, Sendable, CaseIterable {
        /// Debian bookworm's package, installed (`apt-get install ejabberd`).
        case v23_01 = "23.01"
        /// bookworm-backports' package, unpacked beside it by contrib/ejabberd/backports.sh.
        case v24_12 = "24.12"

        /// Where the release is unpacked (its `usr/sbin/ejabberdctl`, libraries and headers); nil for
        /// the installed one.
        public var root: URL? {
            switch self {
            case .v23_01: nil
            case .v24_12: URL(fileURLWithPath: "/opt/apush-backports/ejabberd-24")
            }
        }

        var installHint: String {
            switch self {
            case .v23_01: "apt-get install ejabberd"
            case .v24_12: "run contrib/ejabberd/backports.sh (as root) to unpack ejabberd 24.12"
            }
        }

        /// Its `ejabberdctl`; a release that is not there is an error that says how to get it.
        func ejabberdctl() throws -> URL {
            guard let root else { return try ExternalCommand.locate("ejabberdctl", installHint: installHint) }
            let ejabberdctl = root.appendingPathComponent("usr/sbin/ejabberdctl")
            guard FileManager.default.isExecutableFile(atPath: ejabberdctl.path) else {
                throw ServerProcessError(
                    .notInstalled, "ejabberd \(rawValue) is not unpacked at \(root.path): \(installHint)")
            }
            return ejabberdctl
        }
    }

    /// The apush bridge module (contrib/ejabberd/mod_apush_bridge.erl), compiled by its build script
    /// into the server's directory when the node first starts, and loaded from there.
    public struct Bridge: Sendable {
        /// `contrib/ejabberd/build.sh`: called with the output directory, it writes `mod_apush_bridge.beam`.
        public var buildScript: URL
        /// `apush_bridge_allowed_services`; empty allows every service.
        public var allowedServices: [String]

        public init(buildScript: URL, allowedServices: [String] = []) {
            self.buildScript = buildScript
            self.allowedServices = allowedServices
        }
    }

    public nonisolated let domain: String
    public nonisolated let componentJID: String
    public nonisolated let componentSecret: String
    public nonisolated let c2sPort: Int
    public nonisolated let componentPort: Int
    /// The Erlang distribution port that commands (`erl_call`) reach the node on (no epmd runs).
    public nonisolated let distributionPort: Int
    /// The component port of each of `otherComponents` (each has a listener of its own).
    public nonisolated let otherComponentPorts: [String: Int]
    public nonisolated let nodeName: String
    private nonisolated let cookie: String
    /// Holds `ejabberd.yml`, `ejabberdctl.cfg`, `spool/` (Mnesia), `logs/` and the pidfile.
    public nonisolated let baseDirectory: URL
    public nonisolated let bridge: Bridge?
    public nonisolated let release: Release
    private nonisolated let ejabberdctl: URL
    private var process: ServerProcess?

    /// Writes the configuration into a fresh temporary directory; nothing runs until `start()`.
    /// - Parameters:
    ///   - extraModulesConfig: YAML lines added inside `modules:` (indented by the caller as `  mod_x: {}`).
    ///   - extraConfig: YAML lines added at the top level.
    ///   - codePaths: directories of `.beam` files (e.g. a bridge module) added to the code path.
    ///   - otherComponents: more components (JID → secret), e.g. a stand-in App Server.
    ///   - bridge: runs the apush bridge for `componentJID` (with `mod_pubsub`'s PEP for XEP-0490 reads),
    ///     built against `release`'s headers.
    ///   - release: which ejabberd runs; one that is not installed (or unpacked) throws `.notInstalled`.
    public init(
        domain: String = "localhost",
        componentJID: String,
        componentSecret: String,
        otherComponents: [String: String] = [:],
        extraModulesConfig: String = "",
        extraConfig: String = "",
        codePaths: [String] = [],
        bridge: Bridge? = nil,
        release: Release = .v23_01
    ) throws {
        self.release = release
        ejabberdctl = try release.ejabberdctl()
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
        cookie = unique
        baseDirectory = try ServerDirectory.create(prefix: "ejabberd")
        self.bridge = bridge
        let base = baseDirectory.path
        for directory in ["spool", "logs"] {
            try FileManager.default.createDirectory(
                at: baseDirectory.appendingPathComponent(directory), withIntermediateDirectories: true)
        }
        let codePathOptions = (codePaths + (bridge == nil ? [] : [bridgeDirectory.path])).map { " -pa \($0)" }.joined()
        let controlConfig = """
            ERLANG_NODE=\(nodeName)
            ERL_OPTIONS="-setcookie \(cookie)\(codePathOptions)"
            ERL_DIST_PORT=\(distributionPort)
            INET_DIST_INTERFACE=127.0.0.1
            EXEC_CMD=as_current_user
            SPOOL_DIR=\(base)/spool
            LOGS_DIR=\(base)/logs
            EJABBERD_PID_PATH=\(base)/ejabberd.pid

            """
        let quote = ServerDirectory.quoted
        // Bridged, MAM archives every chat message as a deployment for push would (mod_mam's default
        // `never` archives nothing, and then mod_push pushes no message while another device is online).
        let config = """
            hosts: [\(quote(domain))]
            loglevel: info
            auth_password_format: plain
            listen:
              - port: \(c2sPort)
                ip: "127.0.0.1"
                module: ejabberd_c2s
                starttls: false
                max_stanza_size: 262144
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
              mod_mam: {db_type: mnesia\(bridge == nil ? "" : ", default: always")}
              mod_push: {include_sender: true}
            \(bridge.map { bridge in
                """
                  mod_pubsub: {plugins: [flat, pep]}
                  mod_apush_bridge:
                    apush_bridge_component: \(quote(componentJID))
                    apush_bridge_allowed_services: [\(bridge.allowedServices.map(quote).joined(separator: ", "))]
                """
            } ?? "")
            \(extraModulesConfig)
            \(extraConfig)

            """
        try controlConfig.write(
            to: baseDirectory.appendingPathComponent("ejabberdctl.cfg"), atomically: true, encoding: .utf8)
        try config.write(to: baseDirectory.appendingPathComponent("ejabberd.yml"), atomically: true, encoding: .utf8)
        // ejabberdctl points Erlang at CONFIG_DIR/inetrc and logs an error when it is missing.
        try "".write(to: baseDirectory.appendingPathComponent("inetrc"), atomically: true, encoding: .utf8)
    }

    deinit {
        try? FileManager.default.removeItem(at: baseDirectory)
    }

    /// Where the bridge's `.beam` is built and loaded from.
    public nonisolated var bridgeDirectory: URL { baseDirectory.appendingPathComponent("bridge") }

    /// The PID of the running `ejabberdctl foreground` (the Erlang VM runs in its process group), nil when stopped.
    public var pid: Int32? { process?.pid }

    /// Builds the bridge (once), starts the node, waits for the c2s and component ports, then for
    /// `ejabberdctl status` to report it started.
    public func start() async throws {
        guard process == nil else { return }
        try await buildBridge()
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
        try await run(["register", user, domain, password], what: "register \(user)")
    }

    /// Deletes the account `user@domain` through the running node, as an operator would: its modules
    /// hear of it (`remove_user`).
    public func unregister(user: String) async throws {
        try await run(["unregister", user, domain], what: "unregister \(user)")
    }

    private func run(_ arguments: [String], what: String) async throws {
        guard process != nil else {
            throw ServerProcessError(.notRunning, "ejabberd must be running to \(what)")
        }
        var result = try await control(arguments)
        // erl_call, loaded, sometimes fails to reach a node that is up: nothing was done, so try again.
        for _ in 1...3 where result.status != 0 && result.output.contains("failed to connect") {
            try await Task.sleep(for: .milliseconds(500))
            result = try await control(arguments)
        }
        guard result.status == 0 else {
            throw ServerProcessError(.commandFailed, "ejabberdctl \(what) exited \(result.status): \(result.output)")
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

    /// Runs an `ejabberdctl` command (e.g. `["register", …]`) in the running node through `erl_call`,
    /// erlang-base's small C client: a few milliseconds, where `ejabberdctl` boots an Erlang VM for each
    /// command (a second or more under load, four times per testbed). The output is the command's, its
    /// status the one `ejabberdctl` would exit with; a node not reachable yet is a non-zero status.
    private func control(_ arguments: [String]) async throws -> ExternalCommand.Result {
        let erlCall = try ExternalCommand.locate(
            "erl_call", installHint: "apt-get install erlang-base",
            also: ["/usr/lib/erlang/bin"])
        // Each argument as the list of its code points, as ejabberdctl hands them over: a quoted string
        // would reach the node as UTF-8 bytes, one character each.
        let strings = arguments.map { "[" + $0.unicodeScalars.map { String($0.value) }.joined(separator: ",") + "]" }
        let result = try await ExternalCommand.run(
            erlCall,
            [
                "-address", "127.0.0.1:\(distributionPort)", "-c", cookie, "-fetch_stdout",
                "-a", "ejabberd_ctl process [[\(strings.joined(separator: ", "))]]",
            ],
            workingDirectory: baseDirectory)
        // With -fetch_stdout the command's output comes first, then the returned status on a line of its own.
        var lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        guard result.status == 0,
            let status = lines.popLast().flatMap({ Int32($0.trimmingCharacters(in: .whitespaces)) })
        else { return ExternalCommand.Result(status: result.status == 0 ? -1 : result.status, output: result.output) }
        return ExternalCommand.Result(status: status, output: lines.joined(separator: "\n"))
    }

    /// Compiles the bridge with its build script unless its `.beam` is there from an earlier start.
    private func buildBridge() async throws {
        guard let bridge else { return }
        let beam = bridgeDirectory.appendingPathComponent("mod_apush_bridge.beam")
        guard !FileManager.default.fileExists(atPath: beam.path) else { return }
        let bash = try ExternalCommand.locate("bash", installHint: "apt-get install bash")
        let result = try await ExternalCommand.run(
            bash,
            [bridge.buildScript.path] + (release.root.map { ["--root", $0.path] } ?? []) + [bridgeDirectory.path],
            workingDirectory: baseDirectory,
            timeout: .seconds(120))
        guard result.status == 0, FileManager.default.fileExists(atPath: beam.path) else {
            throw ServerProcessError(
                .commandFailed,
                "\(bridge.buildScript.path) \(bridgeDirectory.path) exited \(result.status) without building "
                    + "mod_apush_bridge.beam:\n\(result.output)")
        }
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
                throw ServerProcessError(
                    .portTimeout, "ejabberdctl status still exits \(result.status): \(result.output)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
