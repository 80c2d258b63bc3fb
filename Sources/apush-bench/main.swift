import APush
import ComponentHost
import Foundation
import Logging
import SQLite
import Sealing
import Store
import Synchronization
import XMLStream
import XMPP
import LocalServers

// Top-level code, not @main: the target has more than one file.
try await Bench.main()

/// Measures the push path against the seal that bounds it: a sealed push costs two X25519
/// multiplications (the ephemeral key and the shared secret), so the figure that matters is how close
/// a whole publish (parse → classify → store → coalesce → seal → build the upstream IQ) comes to that.
/// Prints figures and ratios; it never fails on a timing. Build with `-c release` for real numbers.
/// `apush-bench flood` floods a running component instead (Flood.swift); `apush-bench e2e` measures the
/// pipeline through a real Prosody against Prosody publishing straight to the App Server (EndToEnd.swift);
/// `apush-bench scale` measures one with a million registrations in its store (Scale.swift);
/// `apush-bench postgresql` measures whole publishes on PostgreSQL against SQLite WAL, and two instances
/// on one PostgreSQL database against one (PostgreSQLBench.swift); `apush-bench publish` runs whole
/// publishes alone, for a profiler; `apush-bench statements` times the store's statements in them
/// (StatementTimes.swift); `apush-bench synchronous` measures a WAL file's commits synced at each commit
/// against at checkpoints only (SynchronousBench.swift). `apush-bench [COUNT] [ROUNDS]` (2000, 3) runs the default set, whose
/// last figure pairs the seal and a whole publish on WAL in each of ROUNDS rounds.
struct Bench {
    static func main() async throws {
        let rest = Array(CommandLine.arguments.dropFirst(2))
        switch CommandLine.arguments.dropFirst().first {
        case "flood":
            try await Flood.run(rest)
            return
        case "e2e":
            try await EndToEnd.run(rest)
            return
        case "scale":
            try await Scale.run(rest)
            return
        case "postgresql":
            try await PostgreSQLBench.run(rest)
            return
        case "publish":
            try await publishesOnly(rest)
            return
        case "statements":
            try await StatementTimes.run(rest)
            return
        case "synchronous":
            try await SynchronousBench.run(rest)
            return
        default:
            break
        }
        let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 2000
        let rounds = max(1, Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 3)
        print("apush-bench: \(count) operations each (\(isDebug ? "DEBUG build: use -c release" : "release build"))")

        let device = KeyPair.generate()
        let x25519 = measure("X25519 key generation (one scalar multiplication)", count) { _ in
            _ = KeyPair.generate()
        }
        let devicePublicKey = device.publicKey
        // The figure every ratio compares with: measured alone, on every core, and in each paired round.
        let sealOnce: @Sendable () throws -> Void = { _ = try Envelope.seal(summary, to: devicePublicKey) }
        let (seal, pooledSeal) = try measureSeals(count, key: devicePublicKey)
        let collapse = try CollapseKey(bytes: Array(repeating: 7, count: 32))
        let tag = measure("collapse tag (HMAC-SHA256)", count) { index in
            _ = collapse.tag(account: "alice@example.org", chat: "chat\(index)@example.org")
        }

        let stanzas = (0..<count).map { index in
            publish(index, key: device.publicKey)
        }
        let parse = try measure("parse a bridged publish (libxml2 → Element)", count) { index in
            _ = try Element.parse(stanzas[index])
        }
        let elements = try stanzas.map { try Element.parse($0) }

        let roundTripStore = try SQLitePushStore(.memory)
        let roundTrip = try await measureAsync(
            "one store round trip (a registration lookup, a hop to the store's thread and back)", count
        ) { index in
            _ = try await roundTripStore.registration(
                domain: "example.org", token: "bench-token-\(index % 64)",
                account: nil)
        }
        let policyJSON = Data(
            #"{"messages":true,"muted":["bob@example.org"],"quietHours":"22:00-07:00","timezone":"Europe/Prague"}"#.utf8
        )
        let policy = try measure("decode a policy document (JSON)", count) { _ in
            _ = try JSONDecoder().decode(PushPolicy.self, from: policyJSON)
        }

        var rows: [(String, Figure)] = []
        for (name, location) in [
            ("SQLite in memory", SQLitePushStore.Location.memory),
            ("SQLite file (WAL)", .file(path: temporaryStore())),
        ] {
            rows.append((name, try await measurePublishes(elements, on: location, name: name)))
        }

        // Sustained throughput: publishes as a busy server sends them, against seals on every core.
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let sealsOnEveryCore = try await measureOnEveryCore(
            "Envelope.seal on every core (\(cores) at once)", count, sealOnce)
        let loaded = try await publishesInFlight(16, count, key: device.publicKey)

        print("")
        print("ratios of rates (wall time, one publish after another)")
        ratio("seal rate / X25519 rate (a seal is 2 multiplications: 0.5 is the floor)", seal.rate / x25519.rate)
        ratio("seal with a pooled ephemeral key / seal", pooledSeal.rate / seal.rate)
        for (name, figure) in rows {
            ratio("publish rate / seal rate, \(name) (1.0: the seal is all the cost)", figure.rate / seal.rate)
        }
        ratio("parse rate / seal rate", parse.rate / seal.rate)
        ratio("store round trip rate / seal rate", roundTrip.rate / seal.rate)
        ratio("policy decode rate / seal rate", policy.rate / seal.rate)
        ratio("collapse tag rate / seal rate", tag.rate / seal.rate)
        print("ratios of CPU (every thread: what sustained throughput on busy cores follows)")
        for (name, figure) in rows {
            ratio("seal CPU / publish CPU, \(name)", seal.cpuMicroseconds / figure.cpuMicroseconds)
        }
        print("sustained throughput (wall time, every core busy)")
        ratio(
            "publish rate, 16 in flight on WAL / seal rate on every core", loaded.rate / sealsOnEveryCore.rate)
        // What a component that sealed on one thread and did nothing else could push: the store's thread
        // and the publishes' spread the rest over the other cores.
        ratio("publish rate, 16 in flight on WAL / seal rate on one core", loaded.rate / seal.rate)
        ratio("seal CPU / publish CPU, 16 in flight on WAL", seal.cpuMicroseconds / loaded.cpuEach)

        // A shared machine's speed drifts between runs and rows (±25 % here): each round measures the
        // seal and whole publishes on WAL back to back, and its ratio is its own; the median is the figure.
        print("paired rounds (the seal, then whole publishes on a fresh WAL file, back to back)")
        var paired: [Double] = []
        for round in 1...rounds {
            let roundSeal = try measure("round \(round): Envelope.seal", count) { _ in try sealOnce() }
            let roundPublish = try await measurePublishes(
                elements, on: .file(path: temporaryStore()), name: "round \(round): SQLite file (WAL)")
            paired.append(roundPublish.rate / roundSeal.rate)
        }
        paired.sort()
        ratio(
            String(
                format: "publish rate / seal rate on WAL, median of %d rounds (%.2f–%.2f)", rounds, paired[0],
                paired[paired.count - 1]), paired[paired.count / 2])
        print(String(format: "resident memory after the run: %.1f MiB", residentMiB()))
    }

    /// `apush-bench publish [COUNT] [memory|wal] [IN_FLIGHT]`: whole publishes alone, for a profiler
    /// (`perf record`): one after another, or IN_FLIGHT at once on WAL as a busy server sends them.
    static func publishesOnly(_ arguments: [String]) async throws {
        let count = Int(arguments.first ?? "") ?? 20_000
        let wal = arguments.dropFirst().first == "wal"
        let device = KeyPair.generate()
        if let inFlight = arguments.dropFirst(2).first.flatMap({ Int($0) }), inFlight > 1 {
            _ = try await publishesInFlight(inFlight, count, key: device.publicKey)
            return
        }
        let elements = try (0..<count).map { index in
            try Element.parse(
                publish(index, key: device.publicKey))
        }
        let location = wal ? SQLitePushStore.Location.file(path: temporaryStore()) : .memory
        _ = try await measurePublishes(elements, on: location, name: wal ? "SQLite file (WAL)" : "SQLite in memory")
    }

    /// `count` whole publishes on a WAL file, `inFlight` at once as a busy server sends them (after one
    /// for each device, which registers it).
    static func publishesInFlight(_ inFlight: Int, _ count: Int, key: [UInt8]) async throws -> PostgreSQLBench.Row {
        try await PostgreSQLBench.row(
            "whole publishes, \(inFlight) in flight (SQLite file (WAL))",
            try (0..<PostgreSQLBench.devices + count).map { try Element.parse(publish($0, key: key)) },
            on: .sqlite(.normal), inFlight: inFlight)
    }

    /// Each of `elements` handled as the server's publish, sealed and sent to an App Server that
    /// answers at once; returns publishes per second.
    static func measurePublishes(
        _ elements: [Element], on location: SQLitePushStore.Location, name: String, synchronous: Synchronous = .normal,
        statementObserver: (@Sendable (String, Duration) -> Void)? = nil
    ) async throws -> Figure {
        defer { removeTemporaryStore(location) }
        let sender = AnsweringSender()
        var settings = APushSettings()
        settings.appServer = "push.example.org"
        let store = try SQLitePushStore(location, synchronous: synchronous, statementObserver: statementObserver)
        let module = try APushModule(store: store, settings: settings, logger: .disabled)
        let context = ModuleContext(
            componentJID: try JID("apush.example.org"), servedDomains: ["example.org"],
            admins: [], sender: sender, logger: .disabled)
        let route = module.iqRoutes[0]
        let figure = try await measureAsync("whole publish, each one sealed and sent (\(name))", elements.count) {
            index in
            _ = try await route.handler(elements[index], context)
        }
        precondition(sender.sent == elements.count, "every publish must reach the App Server")
        return figure
    }

    /// A command's options as `parse` reads them; a usage error is said and the run exits with 2.
    static func options<T>(_ parse: () throws -> T) -> T {
        do {
            return try parse()
        } catch {
            Flood.say("\(error)")
            exit(2)
        }
    }

    static var isDebug: Bool {
        #if DEBUG
            true
        #else
            false
        #endif
    }

    /// A measured rate: operations per second of wall time, and the CPU each took in the whole process
    /// (every thread: a background refill of the key pool counts).
    struct Figure {
        var rate: Double
        var cpuMicroseconds: Double
    }

    /// Runs `body` `count` times and prints its figure.
    static func measure(_ name: String, _ count: Int, _ body: (Int) throws -> Void) rethrows -> Figure {
        let (start, cpu) = (ContinuousClock.now, processCPUSeconds())
        for index in 0..<count { try body(index) }
        return report(name, count, ContinuousClock.now - start, processCPUSeconds() - cpu)
    }

    /// Runs `body` `count` times spread over one task a core, and prints its figure.
    static func measureOnEveryCore(_ name: String, _ count: Int, _ body: @escaping @Sendable () throws -> Void)
        async throws -> Figure
    {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let (start, cpu) = (ContinuousClock.now, processCPUSeconds())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for core in 0..<cores {
                group.addTask {
                    for _ in stride(from: core, to: count, by: cores) { try body() }
                }
            }
            try await group.waitForAll()
        }
        return report(name, count, ContinuousClock.now - start, processCPUSeconds() - cpu)
    }

    static func measureAsync(_ name: String, _ count: Int, _ body: @Sendable (Int) async throws -> Void) async rethrows
        -> Figure
    {
        let (start, cpu) = (ContinuousClock.now, processCPUSeconds())
        for index in 0..<count { try await body(index) }
        return report(name, count, ContinuousClock.now - start, processCPUSeconds() - cpu)
    }

    /// The summary every seal here seals: a message's, 174 bytes.
    static let summary = Array(
        #"{"v":2,"kind":"message","account":"alice@example.org","chat":"bob@example.org","from":"bob@example.org","count":3,"id":"2f1c7d1e-91a4-4cde-a0b7-2b6e8a1f0c55","ts":1764430000}"#
            .utf8)

    /// The seal of `summary` to `key`, then the same with its ephemeral key taken from a full pool.
    static func measureSeals(_ count: Int, key: [UInt8]) throws -> (seal: Figure, pooled: Figure) {
        let seal = try measure("Envelope.seal of a 174-byte summary", count) { _ in
            _ = try Envelope.seal(summary, to: key)
        }
        let pool = EphemeralKeyPool(capacity: count)
        pool.settle()
        let pooled = try measure("Envelope.seal, its ephemeral key made ahead (a full pool)", count) { _ in
            _ = try Envelope.seal(summary, to: key, keys: pool)
        }
        return (seal, pooled)
    }

    static func report(_ name: String, _ count: Int, _ elapsed: Duration, _ cpuSeconds: Double) -> Figure {
        let seconds = Flood.seconds(elapsed)
        let figure = Figure(rate: Double(count) / seconds, cpuMicroseconds: cpuSeconds / Double(count) * 1e6)
        print(
            "  " + padded(name, 66)
                + String(
                    format: "%9.0f/s %8.1f µs each, %7.1f µs CPU", figure.rate, seconds / Double(count) * 1e6,
                    figure.cpuMicroseconds))
        return figure
    }

    /// User and system time of the whole process so far.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func ratio(_ name: String, _ value: Double) {
        print("  " + padded(name, 76) + String(format: "%6.2f", value))
    }

    static func padded(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(1, width - text.count))
    }

    /// The `index`th publish of a run: 64 devices of 64 accounts, each message from a new sender, so
    /// each is pushed at once.
    static func publish(_ index: Int, key: [UInt8]) -> String {
        publish(
            token: "bench-token-\(index % 64)", sender: "user\(index)@example.org", key: key,
            account: "account\(index % 64)@example.org")
    }

    /// A bridged publish for a message from `sender` to `account` (a new chat each time, so each one is
    /// pushed); `id` names the IQ and the message (the sender unless given).
    static func publish(
        token: String, sender: String, key: [UInt8], account: String = "alice@example.org",
        id: String? = nil
    ) -> String {
        let id = id ?? sender
        return """
            <iq xmlns='jabber:component:accept' type='set' from='example.org' to='apush.example.org' id='\(id)'>\
            <pubsub xmlns='http://jabber.org/protocol/pubsub'><publish node='\(token)'><item>\
            <notification xmlns='urn:xmpp:push:0'><account xmlns='urn:xmpp:apush:bridge:0' jid='\(account)'/>\
            <forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' type='chat' id='m-\(id)' \
            from='\(sender)/phone' to='\(account)'><body>not measured, never kept</body>\
            <origin-id xmlns='urn:xmpp:sid:0' id='o-\(id)'/></message></forwarded></notification></item></publish>\
            <publish-options><x xmlns='jabber:x:data' type='submit'>\
            <field var='FORM_TYPE'><value>http://jabber.org/protocol/pubsub#publish-options</value></field>\
            <field var='pushModule'><value>bench</value></field>\
            <field var='apushEncryptionPublicKey'><value>\(Base64.encode(key))</value></field></x></publish-options>\
            </pubsub></iq>
            """
    }

    static func temporaryStore() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("apush-bench-\(getpid()).sqlite").path
    }

    /// Removes a store at `temporaryStore()` with its log, so the next row starts afresh.
    static func removeTemporaryStore(_ location: SQLitePushStore.Location) {
        guard case .file(let path) = location else { return }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// The machine's 1, 5 and 15 minute load averages, as /proc/loadavg gives them.
    static var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func residentMiB() -> Double {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
            let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
    }
}
