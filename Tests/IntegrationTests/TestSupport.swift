import ComponentHost
import Foundation
import HTTPServer
import Logging
import Sealing
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

@testable import APush

extension Trait where Self == ConditionTrait {
    /// For a scenario whose component runs as a child process under heavy load (kill -9 rounds, two
    /// instances, a database restart): under a sanitizer the child's report lands in its log, not the
    /// run's, so it would add only load, under which other suites' liveness bounds were passed. The
    /// plain run of the same command runs it.
    static var leftToThePlainRun: Self {
        .disabled(if: SanitizedRun.isActive, "its component is a child process under load: left to the plain run")
    }
}

/// A real server (Prosody or ejabberd, each with or without its bridge), the component (in this process,
/// or as its own process so a test can `kill -9` it), a stand-in App Server on the same server, and
/// real c2s clients. Everything on loopback ports of its own.
final class PushTestbed: Sendable {
    enum Server: Sendable {
        /// Prosody 0.12 with mod_cloud_notify and contrib/prosody's bridge.
        case prosodyBridged
        /// Prosody 0.12 with stock mod_cloud_notify.
        case prosodyStock
        /// Prosody 13.0 (contrib/prosody/backports.sh) with its mod_cloud_notify and the bridge.
        case prosody13Bridged
        /// Prosody 13.0 with its stock mod_cloud_notify.
        case prosody13Stock
        /// ejabberd 23.01 with stock mod_push.
        case ejabberd
        /// ejabberd 23.01 with mod_push and contrib/ejabberd's bridge.
        case ejabberdBridged
        /// ejabberd 24.12 (bookworm-backports, unpacked by contrib/ejabberd/backports.sh) with stock mod_push.
        case ejabberd24
        /// ejabberd 24.12 with mod_push and the bridge built against 24.12.
        case ejabberd24Bridged

        /// The Prosody release it runs, nil for ejabberd.
        var prosodyRelease: ProsodyServer.Release? {
            switch self {
            case .prosodyBridged, .prosodyStock: .v0_12
            case .prosody13Bridged, .prosody13Stock: .v13
            case .ejabberd, .ejabberdBridged, .ejabberd24, .ejabberd24Bridged: nil
            }
        }
    }

    /// Every server with a bridge: the scenarios that need an account named run on each.
    static let bridgedServers: [Server] = [.prosodyBridged, .prosody13Bridged, .ejabberdBridged, .ejabberd24Bridged]

    enum Placement: Sendable {
        /// In this process: fast, and the test can read the module's counters.
        case inProcess
        /// The built `apush-component` binary, so the test can kill it with SIGKILL.
        case process
    }

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// The component's binary from the same build as these tests (beside the test bundle), so a build
    /// in another scratch path (a sanitizer's) runs its own.
    static let componentBinary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("apush-component")
    static let domain = "localhost"
    static let componentJID = "apush.localhost"
    static let appServerJID = "push.localhost"
    /// A domain the server hosts but the component does not serve.
    static let foreignDomain = "elsewhere.localhost"

    let server: any XMPPTestServer
    let appServer: StandInAppServer
    let storePath: String
    /// The `store` setting the component gets: `storePath`, or the PostgreSQL URL the test gave.
    let storeSetting: String
    let directory: URL
    let logSink = InMemoryLogSink()
    let settings: APushSettings
    /// The operations endpoint's port and bounds, when the test asked for it.
    let httpPort: UInt16?
    private let httpSettings: HTTPServer.Settings
    private let componentSecret: String
    private let running = RunningComponent()

    /// Runs `body` with a testbed, and stops every server and process it started, whatever happens:
    /// nothing is left running when the test ends.
    ///
    /// `storeDirectory` holds the store (a fresh temporary directory unless given), unless `storeURL`
    /// names a PostgreSQL database instead; `serverHostConfig`
    /// adds Lua lines to Prosody's VirtualHost, `prosodyModules` modules to its list; `configure` changes the component's settings; `http`
    /// serves the operations endpoint with those bounds (on `httpPort`).
    static func with(
        _ kind: Server, coalesceSeconds: Int = 2, placement: Placement = .inProcess,
        storeDirectory: URL? = nil, storeURL: String? = nil, serverHostConfig: String = "",
        prosodyModules: [String] = [], configure: (inout APushSettings) -> Void = { _ in },
        http: HTTPServer.Settings? = nil, _ body: (PushTestbed) async throws -> Void
    ) async throws {
        let bed = try await PushTestbed(
            kind, coalesceSeconds: coalesceSeconds, storeDirectory: storeDirectory, storeURL: storeURL,
            serverHostConfig: serverHostConfig, prosodyModules: prosodyModules, configure: configure, http: http)
        do {
            try await bed.start(placement)
            try await body(bed)
        } catch {
            await bed.shutdown()
            throw error
        }
        await bed.shutdown()
    }

    private init(
        _ kind: Server, coalesceSeconds: Int, storeDirectory: URL?, storeURL: String?, serverHostConfig: String,
        prosodyModules: [String], configure: (inout APushSettings) -> Void, http: HTTPServer.Settings?
    ) async throws {
        httpPort = try http.map { _ in UInt16(try TestPorts.next()) }
        httpSettings = http ?? HTTPServer.Settings()
        componentSecret = "component-\(UInt64.random(in: .min ... .max))"
        let appServerSecret = "appserver-\(UInt64.random(in: .min ... .max))"
        if let release = kind.prosodyRelease {
            let bridged = kind == .prosodyBridged || kind == .prosody13Bridged
            server = try ProsodyServer(
                release: release, componentJID: Self.componentJID, componentSecret: componentSecret,
                modules: ProsodyServer.defaultModules + (bridged ? ["apush_bridge", "pep"] : []) + prosodyModules,
                extraGlobalConfig: "VirtualHost \"\(Self.foreignDomain)\"",
                hostConfig: (bridged ? "    apush_bridge_component = \"\(Self.componentJID)\"\n" : "")
                    + serverHostConfig,
                pluginPaths: [Self.repository.appendingPathComponent("contrib/prosody").path],
                otherComponents: [Self.appServerJID: appServerSecret])
        } else {
            let bridge = EjabberdServer.Bridge(
                buildScript: Self.repository.appendingPathComponent("contrib/ejabberd/build.sh"))
            server = try EjabberdServer(
                componentJID: Self.componentJID, componentSecret: componentSecret,
                otherComponents: [Self.appServerJID: appServerSecret],
                bridge: [.ejabberdBridged, .ejabberd24Bridged].contains(kind) ? bridge : nil,
                release: [.ejabberd24, .ejabberd24Bridged].contains(kind) ? .v24_12 : .v23_01)
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        storePath = (storeDirectory ?? directory).appendingPathComponent("apush.sqlite").path
        storeSetting = storeURL ?? storePath
        var settings = APushSettings()
        settings.appServer = Self.appServerJID
        settings.coalesceSeconds = coalesceSeconds
        settings.retryMessageSeconds = 30
        configure(&settings)
        self.settings = settings
        appServer = StandInAppServer(
            jid: Self.appServerJID, secret: appServerSecret,
            port: server.componentPort(for: Self.appServerJID))
    }

    /// Starts the server, its accounts, the stand-in App Server and the component.
    private func start(_ placement: Placement) async throws {
        try await server.start()
        for user in ["alice", "bob", "carol"] {
            try await server.register(user: user, password: "pw-\(user)")
        }
        appServer.start()
        try await appServer.waitUntilConnected()
        try await startComponent(placement)
    }

    private var environment: [String: String] {
        var environment = [
            "APUSH_COMPONENT_JID": Self.componentJID, "APUSH_COMPONENT_SECRET": componentSecret,
            "APUSH_SERVER": "127.0.0.1:\(server.componentPort)", "APUSH_DOMAINS": Self.domain,
            "APUSH_APP_SERVER": Self.appServerJID, "APUSH_STORE": storeSetting, "APUSH_LOG": "debug",
        ]
        if let httpPort { environment["APUSH_HTTP"] = "127.0.0.1:\(httpPort)" }
        return environment
    }

    /// Starts the component and waits until the server routes to it (a disco answer through c2s).
    func startComponent(_ placement: Placement, admins: [String] = ["carol@localhost"]) async throws {
        var environment = environment
        environment["APUSH_ADMINS"] = admins.joined(separator: ",")
        switch placement {
        case .inProcess:
            let configuration = try Configuration.load(file: nil, environment: environment, schema: .apushComponent)
            let logger = Logger(label: "apush", level: .debug, sink: logSink)
            let module = try APushModule(
                store: try await PushStoreSetting.open(
                    storeSetting, limits: StoreLimits(), componentSecret: componentSecret
                ).store, settings: settings,
                logger: logger)
            let service = try ComponentService(
                configuration: configuration, modules: [module], logger: logger, httpSettings: httpSettings)
            let connected = AsyncStream<Void>.makeStream()
            let task = Task { await service.run { if $0 == .connected { connected.continuation.yield() } } }
            running.set(.inProcess(task, module))
            for await _ in connected.stream { break }
        case .process:
            let process = try launchProcess(environment: environment, log: "component.log")
            running.set(.process(process))
        }
        do {
            try await waitUntilRouted()
        } catch {
            let log = placement == .process ? componentLog : logSink.text
            throw ServerProcessError(.portTimeout, "\(error). The component's log:\n\(log.suffix(4000))")
        }
    }

    /// A second instance of the component binary on the same server and store (another process, its
    /// log in `log`, its operations endpoint on `httpPort`); the caller stops it.
    func launchSecondInstance(log: String, httpPort: UInt16) throws -> ServerProcess {
        var environment = environment
        environment["APUSH_HTTP"] = "127.0.0.1:\(httpPort)"
        return try launchProcess(environment: environment, log: log)
    }

    /// A second instance in this process, on the same server and store, whose module keeps time on
    /// `clock` (a machine whose clock is off, say), once it is connected; cancel the task to stop it.
    func startSecondInstanceInProcess(clock: PushClock) async throws -> Task<Void, Never> {
        let configuration = try Configuration.load(file: nil, environment: environment, schema: .apushComponent)
        let logger = Logger(label: "second", level: .debug, sink: logSink)
        let module = try APushModule(
            store: try await PushStoreSetting.open(
                storeSetting, limits: StoreLimits(), componentSecret: componentSecret
            ).store, settings: settings, logger: logger, clock: clock)
        let service = try ComponentService(configuration: configuration, modules: [module], logger: logger)
        let connected = AsyncStream<Void>.makeStream()
        let task = Task { await service.run { if $0 == .connected { connected.continuation.yield() } } }
        for await _ in connected.stream { break }
        return task
    }

    /// What the component run as a process (or a second instance, by its `log`) has logged so far.
    /// The component's store, opened apart from the component: to watch what it holds.
    func openStore() async throws -> any PushStore {
        try await PushStoreSetting.open(storeSetting, limits: StoreLimits(), componentSecret: componentSecret).store
    }

    func componentLog(_ log: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(log), encoding: .utf8)) ?? ""
    }

    private func launchProcess(environment: [String: String], log: String) throws -> ServerProcess {
        let binary = Self.componentBinary
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw ServerProcessError(.notInstalled, "\(binary.path) is missing: run `swift build --build-tests` first")
        }
        // A config file carries the push section (the environment has no key for it).
        let config = directory.appendingPathComponent("apush.json")
        try JSONSerialization.data(withJSONObject: [
            "push": [
                "coalesceSeconds": settings.coalesceSeconds, "retryMessageSeconds": settings.retryMessageSeconds,
                "retryCallSeconds": settings.retryCallSeconds,
                "upstreamTimeoutSeconds": settings.upstreamTimeoutSeconds,
                "maxInFlight": settings.maxInFlight,
                "defaults": try JSONSerialization.jsonObject(with: JSONEncoder().encode(settings.defaults)),
            ]
        ]).write(to: config)
        return try ServerProcess(
            name: "apush-component", executable: binary, arguments: ["run", "--config", config.path],
            environment: environment, workingDirectory: directory,
            outputURL: directory.appendingPathComponent(log))
    }

    /// What the component run as a process has logged so far.
    var componentLog: String { componentLog("component.log") }

    /// Restarts the server (same ports and data) and waits until the App Server and the component are
    /// routed to again: both reconnect by themselves.
    func restartServer() async throws {
        try await server.restart()
        try await appServer.waitUntilConnected(timeout: .seconds(20))
        try await waitUntilRouted()
    }

    /// The server routes to the component once a client's disco#info through it is answered.
    func waitUntilRouted() async throws {
        let probe = try await client("carol", resource: "probe")
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let info = try? await probe.discoInfo(of: Self.componentJID), info.hasFeature(Namespace.push) {
                await probe.close()
                return
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        await probe.close()
        throw ServerProcessError(.portTimeout, "the component did not answer through the server within 15 s")
    }

    /// Stops the component: politely in process, as a process with `signal` (SIGKILL unless given;
    /// after SIGTERM it has 10 s to stop gracefully).
    func stopComponent(signal: Int32 = SIGKILL) async {
        switch running.take() {
        case .inProcess(let task, _)?:
            task.cancel()
            await task.value
        case .process(let process)?:
            kill(process.pid, signal)
            await process.stop(gracePeriod: .seconds(signal == SIGKILL ? 1 : 10))
        case nil:
            break
        }
    }

    /// Whether the component still runs: its process lives, or its task in this process does.
    var componentIsRunning: Bool {
        get async {
            switch running.current {
            case .process(let process)?: await process.isGroupAlive
            case .inProcess(let task, _)?: !task.isCancelled
            case nil: false
            }
        }
    }

    /// The module running in this process, for its counters.
    var module: APushModule? {
        if case .inProcess(_, let module)? = running.current { return module }
        return nil
    }

    func statistic(_ name: String) -> Int64 {
        module?.service.statistics.sinceStart[name] ?? 0
    }

    func client(
        _ user: String, resource: String = "tests", domain: String = PushTestbed.domain,
        presence: Bool = true
    ) async throws -> C2SClient {
        try await C2SClient.connect(
            port: server.c2sPort, domain: domain, user: user, password: "pw-\(user)",
            resource: resource, presence: presence)
    }

    /// A device of `user` enables push at the component and goes offline.
    @discardableResult
    func enableDevice(
        _ user: String = "alice", token: String, resource: String = "phone", calls: String? = nil,
        reads: Bool = false, module: String = "fcm-test"
    ) async throws -> KeyPair {
        let key = KeyPair.generate()
        var values: [(String, String)] = [
            ("pushModule", module), ("apushEncryptionPublicKey", Base64.encode(key.publicKey)),
        ]
        if let calls { values.append(("apushCalls", calls)) }
        if reads { values.append(("apushRead", "1")) }
        let form = DataForm(
            type: .submit, formType: Namespace.pubsubPublishOptions,
            fields: values.map { DataForm.Field.value($0.0, $0.1) })
        let device = try await client(user, resource: resource)
        try await device.enablePush(service: Self.componentJID, node: token, publishOptions: form)
        await device.close()
        return key
    }

    func message(
        from sender: C2SClient, to recipient: String, body: String, id: String? = nil,
        type: MessageType = .chat
    ) throws {
        try sender.send(
            Element.message(
                type: type, id: id ?? "m-\(UInt32.random(in: .min ... .max))", to: try JID(recipient),
                children: [
                    Element("body", namespace: Namespace.client, [:], text: body),
                    Element("origin-id", namespace: Namespace.sid, ["id": id ?? UUID().uuidString]),
                ],
                namespace: Namespace.client))
    }

    func propose(from caller: C2SClient, to callee: String, sid: String, media: [String] = ["audio"]) throws {
        try caller.send(
            Element.message(
                type: .chat, id: "p-\(sid)", to: try JID(callee),
                children: [
                    Element(
                        "propose", namespace: Namespace.jingleMessage, ["id": sid],
                        children: media.map { Element("description", namespace: Namespace.jingleRTP, ["media": $0]) }),
                    Element("store", namespace: Namespace.hints),
                ], namespace: Namespace.client))
    }

    /// The next push at the App Server, opened with the device's key here and by the independent
    /// Python opener, and checked to hold none of `secrets`.
    func nextPush(key: KeyPair, secrets: [String] = [], timeout: Duration = .seconds(30)) async throws
        -> (push: ReceivedPush, summary: [String: Any])
    {
        let push: ReceivedPush
        do {
            push = try await appServer.nextPush(timeout: timeout)
        } catch {
            let serverLog = await server.logContents(lastLines: 60)
            Issue.record(
                "no push arrived. The component's log:\n\(String(logSink.text.suffix(6000)))\nThe server's log:\n\(serverLog)"
            )
            throw error
        }
        return try await open(push, key: key, secrets: secrets)
    }

    /// The next push within `window`, opened as `nextPush` opens it; nil when none comes.
    func pushIfAny(key: KeyPair, within window: Duration) async throws -> (push: ReceivedPush, summary: [String: Any])?
    {
        guard let push = try? await appServer.nextPush(timeout: window) else { return nil }
        return try await open(push, key: key, secrets: [])
    }

    /// The summary of `push`, opened as `nextPush` opens it.
    func open(_ push: ReceivedPush, key: KeyPair) async throws -> [String: Any] {
        try await open(push, key: key, secrets: []).summary
    }

    private func open(_ push: ReceivedPush, key: KeyPair, secrets: [String]) async throws
        -> (push: ReceivedPush, summary: [String: Any])
    {
        let opened = try Envelope.open(push.envelope, privateKey: key.privateKey)
        let independent = try await IndependentOpener.open(push.envelope, privateKey: key.privateKey)
        #expect(independent == opened, "the Python opener must read the same plaintext")
        let json = String(decoding: opened, as: UTF8.self)
        for secret in secrets {
            #expect(!json.contains(secret) && !push.envelope.contains(secret), "message text reached the App Server")
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(opened)) as? [String: Any])
        return (push, summary)
    }

    /// No push arrives within `window`.
    func expectNoPush(within window: Duration = .seconds(1), sourceLocation: SourceLocation = #_sourceLocation) async {
        if let push = try? await appServer.nextPush(timeout: window) {
            Issue.record(
                "an unexpected push arrived: kind \(push.kind ?? "message") for node \(push.node)",
                sourceLocation: sourceLocation)
        }
    }

    func shutdown() async {
        await stopComponent()
        await appServer.stop()
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// The component under test, as it runs.
private final class RunningComponent: Sendable {
    enum State: Sendable {
        case inProcess(Task<Void, Never>, APushModule)
        case process(ServerProcess)
    }

    private let state = Mutex<State?>(nil)

    func set(_ value: State) { state.withLock { $0 = value } }
    func take() -> State? {
        state.withLock { state in
            defer { state = nil }
            return state
        }
    }
    var current: State? { state.withLock { $0 } }
}

extension PushStore {
    /// The registration a stock publish (no account named) for the token would use.
    func registration(domain: String, token: String) async throws -> Registration? {
        try await registration(domain: domain, token: token, account: nil)
    }
}
