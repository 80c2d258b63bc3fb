import APush
import ComponentHost
import Foundation
import Logging
import PostgreSQL
import SQLCore
import SQLite
import Sealing
import Store
import Synchronization
import XMLStream
import XMPP
import LocalServers
import BlockingWork

/// `apush-bench postgresql [COUNT] [--in-flight N]`: the store on PostgreSQL against SQLite WAL in the
/// same run (a registration lookup, then whole publishes one after another as in the default run:
/// classify, one store transaction, coalesce, seal, send to an App Server that answers at once, record
/// the answer), then N publishes in flight on one instance against two on one PostgreSQL database.
///
/// A private PostgreSQL 15 (`PostgreSQLServer`, on loopback, durable: fsync on) is started and
/// stopped by the run; each row gets a fresh schema. The instances are in this process: two
/// `APushModule`s, each with its own store and connection pool, on one database, half of the N
/// publishers on each, as ejabberd spreads one component JID's stanzas over its connections. The CPU
/// counts this process and every PostgreSQL process (its backends, writer, WAL writer).
enum PostgreSQLBench {
    struct Options {
        var count = 5000
        /// Publishes handled at once in the second part, across the instances.
        var inFlight = 16

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            if let first = rest.first, let value = Int(first) {
                guard value > 0 else { throw EndToEnd.SetupFailure(Self.usage) }
                count = value
                rest = rest.dropFirst()
            }
            while let flag = rest.popFirst() {
                guard flag == "--in-flight", let text = rest.popFirst(), let value = Int(text), value > 1 else {
                    throw EndToEnd.SetupFailure(Self.usage)
                }
                inFlight = value
            }
        }

        static let usage = "usage: apush-bench postgresql [COUNT 5000] [--in-flight 16 (at least 2)]"
    }

    /// One registration for each of the 64 devices, made before a row's clock starts.
    static let devices = 64

    static func run(_ arguments: [String]) async throws {
        let options = Bench.options { try Options(arguments) }
        let server = try PostgreSQLServer(durable: true)
        do {
            try await server.start()
            try await measure(server, options)
        } catch {
            Flood.say("apush-bench postgresql: SETUP FAILED: \(error)")
            Flood.say(await server.logContents(lastLines: 30))
            await server.stop()
            // exit skips the server's deinit, which removes its directory.
            try? FileManager.default.removeItem(at: server.baseDirectory)
            exit(1)
        }
        await server.stop()
    }

    static func measure(_ server: PostgreSQLServer, _ options: Options) async throws {
        guard let postmaster = await server.pid else { throw EndToEnd.SetupFailure("PostgreSQL is not running") }
        Flood.say(
            "apush-bench postgresql (\(Bench.isDebug ? "DEBUG build: use -c release" : "release build")): "
                + "\(options.count) publishes a row after \(devices) that register the devices; PostgreSQL 15 "
                + "on loopback (pid \(postmaster), fsync on); \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let key = KeyPair.generate().publicKey
        let elements = try (0..<devices + options.count).map { try Element.parse(Bench.publish($0, key: key)) }
        let durable = Engine.postgresql(server, synchronousCommit: true)

        Flood.say("one store call after another: a registration lookup (BEGIN, SELECT, COMMIT on PostgreSQL)")
        let walLookup = try await lookups("SQLite file (WAL)", on: .sqlite(.normal), count: options.count)
        let lookup = try await lookups("PostgreSQL", on: durable, count: options.count)
        Flood.say(String(format: "  PostgreSQL ÷ WAL: lookups/s %.2f", lookup.rate / walLookup.rate))
        Flood.say("one publish after another")
        let wal = try await row("SQLite file (WAL, synchronous=NORMAL)", elements, on: .sqlite(.normal), inFlight: 1)
        let asynchronous = try await row(
            "PostgreSQL, synchronous_commit=off", elements, on: .postgresql(server, synchronousCommit: false),
            inFlight: 1)
        let synchronous = try await row(
            "PostgreSQL, synchronous_commit=on (its default)", elements, on: durable, inFlight: 1)
        for figure in [asynchronous, synchronous] {
            Flood.say(
                String(
                    format: "  %@ ÷ WAL: pushes/s %.2f, CPU per push %.2f", figure.name, figure.rate / wal.rate,
                    figure.cpuEach / wal.cpuEach))
        }

        let inFlight = options.inFlight
        Flood.say("\(inFlight) publishes in flight, PostgreSQL at synchronous_commit=on")
        let walLoaded = try await row(
            "SQLite file (WAL, NORMAL), 1 instance", elements, on: .sqlite(.normal), inFlight: inFlight)
        let one = try await row(
            "PostgreSQL, 1 instance (a pool of 4 connections)", elements, on: durable, inFlight: inFlight)
        let oneWider = try await row(
            "PostgreSQL, 1 instance, a pool of 8", elements, on: durable, inFlight: inFlight, connections: 8)
        let two = try await row(
            "PostgreSQL, 2 instances (4 connections each)", elements, on: durable, inFlight: inFlight, instances: 2)
        Flood.say(
            String(
                format: "  2 instances ÷ 1: pushes/s %.2f (÷ 1 with a pool of 8: %.2f), CPU per push %.2f",
                two.rate / one.rate, two.rate / oneWider.rate, two.cpuEach / one.cpuEach))
        Flood.say(String(format: "  PostgreSQL, 1 instance ÷ WAL: pushes/s %.2f", one.rate / walLoaded.rate))
        Flood.say(
            "CPU per push: this process (the instances) + every PostgreSQL process; the two instances are in "
                + "one process, each with its own store and pool, on one database")
    }

    enum Engine {
        /// A WAL file, its commits waiting for the disk as the mode says.
        case sqlite(Synchronous)
        /// The server, and whether its sessions' commits wait for the log to reach the disk.
        case postgresql(PostgreSQLServer, synchronousCommit: Bool)

        var server: PostgreSQLServer? {
            if case .postgresql(let server, _) = self { server } else { nil }
        }
    }

    struct Row {
        var name: String
        var rate: Double
        /// Microseconds of CPU an operation: this process and the database server's.
        var cpuEach: Double
    }

    /// Registers the devices through the first instance, then times `elements` after them, `inFlight`
    /// at once handed out to `instances` instances in turn, each on its own store of one database.
    static func row(
        _ name: String, _ elements: [Element], on engine: Engine, inFlight: Int, connections: Int = 4,
        instances count: Int = 1
    ) async throws -> Row {
        try await withStores(engine, count, connections: connections) { stores, postmaster in
            let instances = try stores.map(Instance.init)
            for element in elements.prefix(devices) { _ = try await instances[0].handle(element) }
            let measured = elements[devices...]
            let next = Counter(measured.startIndex)
            let failures = Failures()
            let sentBefore = instances.map(\.sender.sent).reduce(0, +)
            let roundTripsBefore = Self.roundTrips(stores)
            let sampler = engine.server.flatMap { inFlight > 1 ? WaitSampler(url: $0.url) : nil }
            let row = await timed(name, measured.count, unit: "pushes/s", postmaster: postmaster) {
                await withTaskGroup(of: Void.self) { group in
                    for worker in 0..<inFlight {
                        let instance = instances[worker % instances.count]
                        group.addTask {
                            while true {
                                let index = next.take()
                                guard index < measured.endIndex else { return }
                                do { try await instance.handle(measured[index]) } catch { failures.add(error) }
                            }
                        }
                    }
                }
                return instances.map(\.sender.sent).reduce(0, +) - sentBefore
            }
            if let summary = failures.summary { Flood.say("    failed: \(summary)") }
            if let states = sampler?.stop() {
                Flood.say(
                    "    the database's busy sessions, on average (pg_stat_activity every 5 ms): "
                        + states.prefix(6).map { String(format: "%.2f %@", $0.sessions, $0.state) }.joined(
                            separator: ", "))
            }
            if let before = roundTripsBefore, let after = Self.roundTrips(stores) {
                let each = { (roundTrips: Int, transactions: Int) in Double(roundTrips) / Double(max(1, transactions)) }
                Flood.say(
                    String(
                        format: "    round trips (counted by the connections): %.2f per publish's transaction, "
                            + "%.2f per answer's (%d and %d transactions); %.2f per push in all, the due work's too",
                        each(
                            after.roundTrips - before.roundTrips, after.transactions - before.transactions),
                        each(
                            after.backgroundRoundTrips - before.backgroundRoundTrips,
                            after.backgroundTransactions - before.backgroundTransactions),
                        after.transactions - before.transactions,
                        after.backgroundTransactions - before.backgroundTransactions,
                        each(after.all - before.all, measured.count)))
            }
            return row
        }
    }

    /// The round trips the stores' transactions made so far, summed; nil for SQLite.
    static func roundTrips(_ stores: [any PushStore]) -> PostgreSQLPushStore.RoundTrips? {
        let counted = stores.compactMap { ($0 as? PostgreSQLPushStore)?.roundTrips }
        guard !counted.isEmpty else { return nil }
        return counted.reduce(into: PostgreSQLPushStore.RoundTrips()) { sum, each in
            sum.transactions += each.transactions
            sum.roundTrips += each.roundTrips
            sum.backgroundTransactions += each.backgroundTransactions
            sum.backgroundRoundTrips += each.backgroundRoundTrips
            sum.all += each.all
        }
    }

    /// `count` registration lookups one after another, on a fresh store.
    static func lookups(_ name: String, on engine: Engine, count: Int) async throws -> Row {
        try await withStores(engine, 1, connections: 4) { stores, postmaster in
            try await timed(name, count, unit: "lookups/s", postmaster: postmaster) {
                for index in 0..<count {
                    _ = try await stores[0].registration(
                        domain: "example.org", token: "bench-token-\(index % devices)", account: nil)
                }
                return count
            }
        }
    }

    /// Runs `body`, which returns how many operations it did, and prints their rate and CPU each (this
    /// process and the database server's).
    static func timed(
        _ name: String, _ planned: Int, unit: String, postmaster: Int32?, _ body: () async throws -> Int
    ) async rethrows -> Row {
        let serverCPU = { postmaster.map { ProcessFigures.serverCPUSeconds(postmaster: $0) } ?? 0 }
        let cpu = (bench: Bench.processCPUSeconds(), server: serverCPU())
        let started = ContinuousClock.now
        let done = try await body()
        let seconds = Flood.seconds(ContinuousClock.now - started)
        let cpuSeconds = Bench.processCPUSeconds() - cpu.bench + serverCPU() - cpu.server
        let row = Row(name: name, rate: Double(done) / seconds, cpuEach: cpuSeconds / Double(max(1, done)) * 1e6)
        Flood.say(
            "  " + Bench.padded(name, 52)
                + String(
                    format: "%7.0f %@ %8.0f µs each (wall), %5.0f µs CPU", row.rate, unit, 1e6 / row.rate, row.cpuEach)
                + (done < planned ? "; only \(done) of \(planned) done" : ""))
        return row
    }

    /// `count` stores on a fresh SQLite file or a fresh schema, removed afterwards; `body` gets them and
    /// the database server's process group, if it has one.
    static func withStores<T>(
        _ engine: Engine, _ count: Int, connections: Int,
        _ body: ([any PushStore], Int32?) async throws -> T
    ) async throws -> T {
        switch engine {
        case .sqlite(let synchronous):
            let location = SQLitePushStore.Location.file(path: Bench.temporaryStore())
            defer { Bench.removeTemporaryStore(location) }
            return try await body([try SQLitePushStore(location, synchronous: synchronous)], nil)
        case .postgresql(let server, let synchronousCommit):
            let schema = "bench_\(UUID().uuidString.prefix(8).lowercased())"
            let setting = synchronousCommit ? "on" : "off"
            let url = server.url + "?options=-c%20search_path%3D\(schema)%20-c%20synchronous_commit%3D\(setting)"
            try await BlockingWork.run {
                _ = try Connection(server.url).execute("CREATE SCHEMA \(schema)")
                let session = try Connection(url).queryOne("SHOW synchronous_commit")[0].stringValue
                guard session == setting else {
                    throw EndToEnd.SetupFailure("synchronous_commit is \(session ?? "?"), not \(setting)")
                }
            }
            var stores: [any PushStore] = []
            // The instances of one component share its secret.
            let componentSecret = "bench-\(UInt64.random(in: .min ... .max))"
            for _ in 0..<count {
                let store = try await PostgreSQLPushStore.open(
                    url: url, componentSecret: componentSecret, connections: connections)
                if let unavailable = store.unavailableAtStart { throw unavailable }
                stores.append(store)
            }
            let result = try await body(stores, await server.pid)
            // The last references: the pools' sessions end before the schema is dropped.
            stores.removeAll()
            try? await BlockingWork.run { _ = try Connection(server.url).execute("DROP SCHEMA \(schema) CASCADE") }
            return result
        }
    }

    /// One push module on a store, as a component process would run it, with an App Server that
    /// answers at once.
    struct Instance: Sendable {
        let route: IQRoute
        let context: ModuleContext
        let sender = AnsweringSender()

        init(store: any PushStore) throws {
            var settings = APushSettings()
            settings.appServer = "push.example.org"
            route = try APushModule(store: store, settings: settings, logger: .disabled).iqRoutes[0]
            context = ModuleContext(
                componentJID: try JID("apush.example.org"), servedDomains: ["example.org"], admins: [],
                sender: sender, logger: .disabled)
        }

        func handle(_ publish: Element) async throws {
            _ = try await route.handler(publish, context)
        }
    }

    /// The next publish to hand out.
    final class Counter: Sendable {
        private let next: Atomic<Int>
        init(_ first: Int) { next = Atomic(first) }
        func take() -> Int { next.add(1, ordering: .relaxed).oldValue }
    }

    /// Why publishes failed, counted by their error.
    final class Failures: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func add(_ error: any Error) { counts.withLock { $0["\(error)", default: 0] += 1 } }
        /// Nil when none failed.
        var summary: String? {
            let counts = counts.withLock { $0 }
            guard !counts.isEmpty else { return nil }
            return counts.sorted { $0.value > $1.value }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        }
    }
}

extension ProcessFigures {
    /// CPU seconds so far of a PostgreSQL server: its postmaster and the processes it started, with
    /// the exited children each waited for (the postmaster waits for its backends). Not its process
    /// group: every backend and helper calls `setsid` and leads a group of its own.
    static func serverCPUSeconds(postmaster: Int32) -> Double {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return 0 }
        let ticks = entries.compactMap { entry -> Double? in
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { return nil }
            // After "pid (comm)": ppid is field 4; utime, stime, cutime and cstime fields 14 to 17.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            guard fields.count > 14, pid == postmaster || Int32(fields[1]) == postmaster else { return nil }
            return fields[11...14].compactMap { Double($0) }.reduce(0, +)
        }
        return ticks.reduce(0, +) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
