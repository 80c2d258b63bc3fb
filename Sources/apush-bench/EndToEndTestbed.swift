import Foundation
import Sealing
import Store
import Synchronization
import XMLStream
import XMPP
import LocalServers

/// What `apush-bench e2e` runs: Prosody with the bridge, the stand-in App Server on it, the component
/// as a process, the accounts of both paths and the sender clients. Everything on loopback ports of
/// its own, stopped by PID, its files in temporary directories that are removed.
final class Testbed {
    let options: EndToEnd.Options
    let prosody: ProsodyServer
    let appServer: StandInAppServer
    let relay: Relay
    static let relayJID = "relay.localhost"
    let recorder = ArrivalRecorder()
    let directory: URL
    let storePath: String
    let componentBinary: URL
    let componentSecret: String
    private(set) var component: ServerProcess?
    private(set) var prosodyPID: Int32 = 0
    private var senders: [C2SClient] = []
    /// The private key of each component-path account's device, to open its pushes.
    private let keys: [KeyPair]
    /// Messages sent so far to each (account, sender) pair of a path (`account * senders + sender`):
    /// the k-th message of a pair is pushed with count k (component) or is the pair's k-th push (direct).
    private var sentPerPair: [PushPath: [Int]]
    private var pushedPerPair: [PushPath: [Int]]
    /// The next message of a path: it goes to account `sequence % accounts` from sender
    /// `(sequence / accounts) % senders`, so a pair recurs only every accounts × senders messages.
    private var sequence: [PushPath: Int] = [:]

    init(options: EndToEnd.Options, componentBinary: URL) throws {
        self.options = options
        self.componentBinary = componentBinary
        componentSecret = "component-\(UInt64.random(in: .min ... .max))"
        let appServerSecret = "appserver-\(UInt64.random(in: .min ... .max))"
        let relaySecret = "relay-\(UInt64.random(in: .min ... .max))"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-e2e-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        storePath = directory.appendingPathComponent("apush.sqlite").path
        let plugins = EndToEnd.repository.appendingPathComponent("contrib/prosody")
        guard FileManager.default.fileExists(atPath: plugins.appendingPathComponent("mod_apush_bridge.lua").path) else {
            throw EndToEnd.SetupFailure("the Prosody bridge is missing at \(plugins.path): run from the repository")
        }
        prosody = try ProsodyServer(
            logLevel: options.prosodyLogLevel, domain: EndToEnd.domain, componentJID: EndToEnd.componentJID,
            componentSecret: componentSecret,
            // offline: messages to an offline account are stored, not bounced to the sender.
            modules: ProsodyServer.defaultModules + ["apush_bridge", "pep", "offline"],
            extraGlobalConfig: Self.prosodyOverrides,
            hostConfig: "    apush_bridge_component = \"\(EndToEnd.componentJID)\"",
            pluginPaths: [plugins.path],
            otherComponents: [EndToEnd.appServerJID: appServerSecret, Self.relayJID: relaySecret])
        appServer = StandInAppServer(
            jid: EndToEnd.appServerJID, secret: appServerSecret, port: prosody.componentPort,
            accepting: .apushOrStock)
        relay = Relay(
            jid: Self.relayJID, secret: relaySecret, port: prosody.componentPort, appServer: EndToEnd.appServerJID)
        keys = (0..<options.accounts).map { _ in KeyPair.generate() }
        let pairs = options.accounts * options.senders
        sentPerPair = Dictionary(
            uniqueKeysWithValues: PushPath.allCases.map { ($0, Array(repeating: 0, count: pairs)) })
        pushedPerPair = sentPerPair
    }

    /// Lua lines after ProsodyServer's own (the later assignment wins): plain stored passwords, so the
    /// accounts can be written as files (`prosodyctl register` takes a second an account); archives and
    /// offline messages in memory, since the file storage slows Prosody as a run goes on.
    static let prosodyOverrides = """
        authentication = "internal_plain"
        default_storage = "internal"
        storage = { archive = "memory"; offline = "memory" }
        """

    static func user(_ path: PushPath, _ index: Int) -> String { path.accountPrefix + "\(index)" }
    static func sender(_ index: Int) -> String { "s\(index)" }
    static let password = "bench-password"

    func start() async throws {
        try writeAccounts()
        try await prosody.start()
        prosodyPID = await prosody.pid ?? 0
        let recorder = recorder
        appServer.observePushes { push in recorder.arrived(push) }
        appServer.start()
        try await appServer.waitUntilConnected(timeout: .seconds(20))
        relay.start()
        try await startComponent()
        for index in 0..<options.senders {
            senders.append(try await client(Self.sender(index)))
        }
        try await waitUntilRouted(relay.isConnected)
        try await enableAccounts()
        try await waitForRegistrations()
        for path in PushPath.allCases { try await probe(path) }
    }

    /// Prosody's own storage format for `internal_plain` accounts, one file each.
    private func writeAccounts() throws {
        let accounts = prosody.baseDirectory.appendingPathComponent("data/\(EndToEnd.domain)/accounts")
        try FileManager.default.createDirectory(at: accounts, withIntermediateDirectories: true)
        let users =
            (0..<options.accounts).flatMap { index in PushPath.allCases.map { Self.user($0, index) } }
            + (0..<options.senders).map(Self.sender)
        for user in users {
            try "return {\n\t[\"password\"] = \"\(Self.password)\";\n};\n".write(
                to: accounts.appendingPathComponent("\(user).dat"), atomically: false, encoding: .utf8)
        }
    }

    private func startComponent() async throws {
        // Coalescing at 1 s: a pair recurs only every accounts × senders messages, so nothing is held
        // below that many pushes a second (a held message would show as "merged").
        let config = directory.appendingPathComponent("apush.json")
        try Data(#"{"push": {"coalesceSeconds": 1}}"#.utf8).write(to: config)
        component = try ServerProcess(
            name: "apush-component", executable: componentBinary, arguments: ["run", "--config", config.path],
            environment: [
                "APUSH_COMPONENT_JID": EndToEnd.componentJID, "APUSH_COMPONENT_SECRET": componentSecret,
                "APUSH_SERVER": "127.0.0.1:\(prosody.componentPort)", "APUSH_DOMAINS": EndToEnd.domain,
                "APUSH_APP_SERVER": EndToEnd.appServerJID, "APUSH_STORE": storePath, "APUSH_LOG": "warning",
            ],
            workingDirectory: directory, outputURL: directory.appendingPathComponent("component.log"))
    }

    private func client(_ user: String, resource: String = "bench") async throws -> C2SClient {
        try await C2SClient.connect(
            port: prosody.c2sPort, domain: EndToEnd.domain, user: user, password: Self.password,
            resource: resource)
    }

    /// The server routes to the component once a client's disco#info through it is answered.
    private func waitUntilRouted(_ relayConnected: @autoclosure () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if relayConnected(), let info = try? await senders[0].discoInfo(of: EndToEnd.componentJID),
                info.hasFeature(Namespace.push)
            {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw EndToEnd.SetupFailure("the component (or the relay) was not routed to through Prosody within 20 s")
    }

    /// Each account's device enables push (through the component, or straight at the App Server) and
    /// goes offline; eight at a time.
    private func enableAccounts() async throws {
        let jobs = (0..<options.accounts).flatMap { index in PushPath.allCases.map { ($0, index) } }
        for batch in stride(from: 0, to: jobs.count, by: 8) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (path, index) in jobs[batch..<min(jobs.count, batch + 8)] {
                    let key = keys[index].publicKey
                    let port = prosody.c2sPort
                    group.addTask { try await Self.enable(path, index, key: key, c2sPort: port) }
                }
                try await group.waitForAll()
            }
        }
    }

    private static func enable(_ path: PushPath, _ index: Int, key: [UInt8], c2sPort: Int) async throws {
        var values = [DataForm.Field.value("pushModule", "bench")]
        if path == .component { values.append(.value("apushEncryptionPublicKey", Base64.encode(key))) }
        let form = DataForm(type: .submit, formType: Namespace.pubsubPublishOptions, fields: values)
        let device = try await C2SClient.connect(
            port: c2sPort, domain: EndToEnd.domain, user: user(path, index), password: password, resource: "phone")
        let services: [PushPath: String] = [
            .direct: EndToEnd.appServerJID, .relay: relayJID, .component: EndToEnd.componentJID,
        ]
        try await device.enablePush(
            service: services[path] ?? "",
            node: path.nodePrefix + "\(index)", publishOptions: form)
        await device.close()
    }

    /// The bridge passes each registration on to the component: wait until it has stored them all, so
    /// no push meets an unknown node.
    private func waitForRegistrations() async throws {
        let store = try SQLitePushStore(.file(path: storePath))
        let deadline = ContinuousClock.now + .seconds(30)
        var stored = 0
        while ContinuousClock.now < deadline {
            stored = try await store.countRegistrations(matching: RegistrationFilter())
            if stored >= options.accounts { return }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw EndToEnd.SetupFailure(
            "the component stored \(stored) of \(options.accounts) registrations within 30 s")
    }

    /// One message to each account of `path`; every push must arrive, or the setup is broken.
    private func probe(_ path: PushPath) async throws {
        let before = recorder.count(path)
        let gate = InFlightGate(places: options.accounts)
        let sent = try await send(path, count: options.accounts, gate: gate, until: .now + .seconds(60))
        let deadline = ContinuousClock.now + .seconds(30)
        while recorder.count(path) - before < sent.count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let arrived = recorder.count(path) - before
        guard arrived >= sent.count else {
            throw EndToEnd.SetupFailure(
                "\(arrived) of \(sent.count) probe pushes arrived within 30 s on the \(path) path")
        }
        _ = correlate(path, recorder.arrivals(path, from: before), sent: [])
    }

    /// A measured phase: sending for warm-up + measured + tail, then the pushes still on their way.
    func run(_ phase: Phase) async throws -> PhaseResult {
        let path = phase.path
        let start = ContinuousClock.now
        let measuredFrom = start + .seconds(options.warmupSeconds)
        let measuredTo = measuredFrom + .seconds(options.steadySeconds)
        let before = recorder.count(path)
        let gate = InFlightGate(places: options.inFlight)
        let load = try driver(path, gate: gate)
        let sendingEnds = measuredTo + .seconds(options.tailSeconds)
        async let sending = load.run(count: .max, gate: gate, until: sendingEnds)
        try await Task.sleep(until: measuredFrom)
        let cpuFrom = cpuSample()
        try await Task.sleep(until: measuredTo)
        let cpuTo = cpuSample()
        let sent = try account(await sending)
        let drainDeadline = ContinuousClock.now + .seconds(30)
        while recorder.count(path) - before < sent.count, ContinuousClock.now < drainDeadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        recorder.release(gate)
        let arrivals = recorder.arrivals(path, from: before)
        guard !arrivals.isEmpty else {
            throw EndToEnd.SetupFailure("no push arrived in the \(phase.name) phase (\(sent.count) messages sent)")
        }
        let measuredSends = sent.filter { $0.at >= measuredFrom && $0.at < measuredTo }
        let (latencies, unmatched) = correlate(path, arrivals, sent: measuredSends)
        let pushesMeasured = arrivals.filter { $0.at >= measuredFrom && $0.at < measuredTo }.count
        let seconds = Flood.seconds(measuredTo - measuredFrom)
        let cpu = (
            component: cpuTo.component - cpuFrom.component, prosody: cpuTo.prosody - cpuFrom.prosody,
            bench: cpuTo.bench - cpuFrom.bench
        )
        let pushes = Double(max(1, pushesMeasured))
        let sorted = latencies.sorted()
        return PhaseResult(
            phase: phase, rate: Double(pushesMeasured) / seconds,
            p50: Self.percentile(sorted, 0.50), p99: Self.percentile(sorted, 0.99), maximum: sorted.last ?? 0,
            sent: sent.count, pushed: arrivals.count, latencies: latencies.count, unmatched: unmatched,
            cpuPerPush: (cpu.component / pushes * 1000, cpu.prosody / pushes * 1000, cpu.bench / pushes * 1000),
            cores: (cpu.component / seconds, cpu.prosody / seconds, cpu.bench / seconds))
    }

    /// Nearest rank; 0 for none.
    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }

    private func cpuSample() -> (component: Double, prosody: Double, bench: Double) {
        (
            ProcessFigures.cpuSeconds(pid: component?.pid ?? 0), ProcessFigures.cpuSeconds(pid: prosodyPID),
            ProcessFigures.cpuSeconds(pid: getpid())
        )
    }

    /// Sends messages of `path` (at most `count`) until `end`, each once `gate` lets one more be in flight.
    private func send(
        _ path: PushPath, count: Int, gate: InFlightGate, until end: ContinuousClock.Instant
    ) async throws -> [SentMessage] {
        let load = try driver(path, gate: gate)
        return try account(await load.run(count: count, gate: gate, until: end))
    }

    /// The path's next messages, from where the last ones left off; each push lets one more through `gate`.
    private func driver(_ path: PushPath, gate: InFlightGate) throws -> LoadDriver {
        recorder.admit(path, through: gate)
        return LoadDriver(
            path: path,
            recipients: try (0..<options.accounts).map { try JID("\(Self.user(path, $0))@\(EndToEnd.domain)") },
            senders: senders, sentPerPair: sentPerPair[path] ?? [], sequence: sequence[path] ?? 0)
    }

    /// Keeps where the driver left off; its messages, or the failure of a sender's link.
    private func account(_ outcome: LoadDriver.Outcome) throws -> [SentMessage] {
        sentPerPair[outcome.path] = outcome.sentPerPair
        sequence[outcome.path] = outcome.sequence
        if let failure = outcome.failure { throw EndToEnd.SetupFailure("a sender's link failed: \(failure)") }
        return outcome.sent
    }

    /// The latency of each push whose message is in `sent`, and how many pushes matched no message
    /// ever sent. A push names its pair: the node the account, the chat (component: sealed in the
    /// envelope, opened here with the device's key) or `last-message-sender` (direct) the sender.
    private func correlate(_ path: PushPath, _ arrivals: [Arrival], sent: [SentMessage]) -> ([Double], Int) {
        var sentAt: [PairMessage: ContinuousClock.Instant] = [:]
        for message in sent { sentAt[message.pair] = message.at }
        var latencies: [Double] = []
        var unmatched = 0
        for arrival in arrivals {
            guard let pair = pair(of: arrival.push, path) else {
                unmatched += 1
                continue
            }
            if let at = sentAt[pair] { latencies.append(Flood.seconds(arrival.at - at) * 1000) }
        }
        return (latencies, unmatched)
    }

    private func pair(of push: ReceivedPush, _ path: PushPath) -> PairMessage? {
        guard push.node.hasPrefix(path.nodePrefix), let account = Int(push.node.dropFirst(path.nodePrefix.count)),
            account >= 0, account < options.accounts
        else { return nil }
        let chat: String
        let ordinal: Int
        switch path {
        case .direct, .relay:
            guard let sender = push.stockSummary?["last-message-sender"] else { return nil }
            chat = sender
            ordinal = 0
        case .component:
            guard let plaintext = try? Envelope.open(push.envelope, privateKey: keys[account].privateKey),
                let summary = try? JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: Any],
                let summaryChat = summary["chat"] as? String, let count = summary["count"] as? Int
            else { return nil }
            chat = summaryChat
            ordinal = count
        }
        // "s7@localhost" or "s7@localhost/bench": sender 7.
        guard chat.hasPrefix("s"), let sender = Int(chat.dropFirst().prefix { $0 != "@" }), sender >= 0,
            sender < options.senders
        else { return nil }
        let index = account * options.senders + sender
        pushedPerPair[path]?[index] += 1
        // Stock pushes carry no count, and one sender's messages to one account are pushed in order.
        return PairMessage(
            account: account, sender: sender, ordinal: path.isStock ? pushedPerPair[path]?[index] ?? 0 : ordinal)
    }

    func diagnostics() async -> String {
        let componentLog =
            (try? String(contentsOf: directory.appendingPathComponent("component.log"), encoding: .utf8)) ?? ""
        return "The component's log (end):\n\(componentLog.suffix(3000))\nProsody's log (end):\n"
            + (await prosody.logContents(lastLines: 30))
    }

    /// Whether anything went wrong on the way: the component's warnings and errors, and Prosody's,
    /// counted by what they say.
    func printLogSummaries() {
        Flood.printLogSummary(directory.appendingPathComponent("component.log"))
        let prosodyLog =
            (try? String(contentsOf: prosody.baseDirectory.appendingPathComponent("prosody.log"), encoding: .utf8))
            ?? ""
        // "Dec 01 14:50:16 source\tlevel\tmessage"; a message's own further lines have no tabs.
        let entries = prosodyLog.split(separator: "\n").compactMap { line -> (level: Substring, message: Substring)? in
            let parts = line.split(separator: "\t", maxSplits: 2)
            return parts.count == 3 && ["warn", "error"].contains(parts[1]) ? (parts[1], parts[2]) : nil
        }
        Flood.printKinds("Prosody log: \(entries.count) warnings and errors", entries)
    }

    func stop() async {
        for sender in senders { await sender.close(timeout: .milliseconds(500)) }
        senders = []
        await appServer.stop()
        await relay.stop()
        await component?.stop()
        await prosody.stop()
        // The process ends before ProsodyServer's deinit would remove its directory.
        try? FileManager.default.removeItem(at: prosody.baseDirectory)
        try? FileManager.default.removeItem(at: directory)
    }
}
