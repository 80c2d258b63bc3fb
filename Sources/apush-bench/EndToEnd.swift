import Foundation
import LocalServers
import Sealing
import Store
import Synchronization
import XMLStream
import XMPP

/// `apush-bench e2e [--accounts N] [--senders N] [--warmup S] [--seconds S] [--in-flight N] [--rounds N]
/// [--one-core] [--debug-log]`: the push pipeline through a real server. A private Prosody 0.12 with the
/// apush bridge, logging at `info` as an operator runs it (`--debug-log`: at `debug`), the component as
/// its own process (the release `apush-component`) on a WAL SQLite file, and the stand-in App Server as a
/// second component of that Prosody; N accounts per path enable push through c2s and go offline; sender
/// clients fire messages at them, each into a chat not pushed to for a long while, so coalescing holds
/// nothing back.
///
/// In paired rounds (every second one in reverse order), one phase per path: Prosody publishing straight
/// to the App Server (stock mod_cloud_notify, no component in the path), through a relay that only
/// routes, and through the component (`--one-core`: also pinned to one core with `taskset`). Prints
/// pushes/s at the App Server over the steady part of each phase, the latency from the send to the App
/// Server, the CPU of each process per push (from /proc), each round's ratio to direct and the medians,
/// and the component's peak RSS.
/// A benchmark: it never fails on a timing, only when the setup breaks (e.g. a push never arrives).
enum EndToEnd {
    struct Options {
        var accounts = 200
        var senders = 16
        var warmupSeconds = 3
        var steadySeconds = 10
        /// Sending goes on this long after the steady part, so its end sees no drain.
        var tailSeconds = 2
        /// Messages sent and not yet pushed to the App Server, across all senders: enough to keep the
        /// server busy (it is the limit), so the latencies are those of a saturated pipeline.
        var inFlight = 128
        /// Each round runs every phase; every second round in reverse order, so that Prosody slowing
        /// down as its stores fill, and the machine's other load, weigh on each path alike.
        var rounds = 5
        /// Also a phase with the component pinned to one core.
        var oneCore = false
        /// Prosody's log level: `info` as an operator runs it, `debug` when asked.
        var prosodyLogLevel = ProsodyServer.LogLevel.info

        var phases: [Phase] { oneCore ? Phase.all : Phase.all.filter { $0.cores != "0" } }

        init(_ arguments: [String]) throws {
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                switch flag {
                case "--one-core":
                    oneCore = true
                    continue
                case "--debug-log":
                    prosodyLogLevel = .debug
                    continue
                default: break
                }
                guard let text = rest.popFirst(), let value = Int(text), value > 0 else {
                    throw SetupFailure("\(flag) needs a positive whole number\n\(Self.usage)")
                }
                switch flag {
                case "--accounts": accounts = value
                case "--senders": senders = value
                case "--warmup": warmupSeconds = value
                case "--seconds": steadySeconds = value
                case "--in-flight": inFlight = value
                case "--rounds": rounds = value
                default: throw SetupFailure("unknown option \(flag)\n\(Self.usage)")
                }
            }
        }

        static let usage =
            "usage: apush-bench e2e [--accounts 200] [--senders 16] [--warmup 3] [--seconds 10] [--in-flight 128] [--rounds 5] "
            + "[--one-core] [--debug-log]"
    }

    /// The setup broke: said plainly, the run stops (exit 1).
    struct SetupFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static let domain = "localhost"
    static let componentJID = "apush.localhost"
    static let appServerJID = "push.localhost"
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func run(_ arguments: [String]) async throws {
        let options = Bench.options { try Options(arguments) }
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("apush-component")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            Flood.say("apush-bench e2e: \(binary.path) is missing: build it first (swift build -c release)")
            exit(1)
        }
        let bed = try Testbed(options: options, componentBinary: binary)
        do {
            try await bed.start()
            try await measure(bed, options)
        } catch {
            Flood.say("apush-bench e2e: SETUP FAILED: \(error)")
            Flood.say(await bed.diagnostics())
            await bed.stop()
            exit(1)
        }
        await bed.stop()
    }

    static func measure(_ bed: Testbed, _ options: Options) async throws {
        Flood.say(
            "apush-bench e2e (\(Bench.isDebug ? "DEBUG build: use -c release" : "release build")): "
                + "\(options.accounts) accounts a path, \(options.senders) senders, \(options.inFlight) messages in flight, "
                + "\(options.warmupSeconds) s warm-up + \(options.steadySeconds) s measured + \(options.tailSeconds) s tail a phase; "
                + "Prosody pid \(bed.prosodyPID), component pid \(bed.component?.pid ?? 0)")
        Flood.say(
            "server: Prosody \(bed.prosody.release.version ?? "(version unknown)") logging at "
                + "\(options.prosodyLogLevel.rawValue)\(options.prosodyLogLevel == .debug ? " (--debug-log)" : ""), "
                + "\(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(Bench.loadAverage)")
        var rounds: [[PhaseResult]] = []
        for round in 1...options.rounds {
            var results: [PhaseResult] = []
            for phase in round % 2 == 1 ? options.phases : options.phases.reversed() {
                if let cores = phase.cores, let pid = bed.component?.pid { try pin(pid, to: cores) }
                let result = try await bed.run(phase)
                Flood.say("  round \(round): " + result.line)
                results.append(result)
            }
            rounds.append(results)
        }
        Flood.say("")
        printTable(rounds, bed: bed, options: options)
        bed.printLogSummaries()
    }

    static func printTable(_ rounds: [[PhaseResult]], bed: Testbed, options: Options) {
        Flood.say(
            "path (round)                      pushes/s  p50 ms  p99 ms  max ms   CPU/push: component  Prosody  bench   "
                + "CPU (cores): component  Prosody  bench")
        for (index, results) in rounds.enumerated() {
            for result in results { Flood.say(row(result, label: "\(result.phase.name) (\(index + 1))")) }
        }
        let medians = options.phases.map { phase in
            PhaseResult.median(rounds.flatMap { $0.filter { $0.phase.name == phase.name } })
        }
        for result in medians {
            Flood.say(row(result, label: "\(result.phase.name) (median)"))
        }
        guard let direct = medians.first(where: { $0.phase.path == .direct }), direct.rate > 0 else { return }
        for result in medians where result.phase.path != .direct {
            // Each round's ratio is taken within the round, so the machine's load in that round weighs
            // on both sides of it.
            let ratios = rounds.map { round in
                let rate = round.first { $0.phase.name == result.phase.name }?.rate ?? 0
                let directRate = round.first { $0.phase.path == .direct }?.rate ?? 0
                return rate / max(1e-9, directRate)
            }
            Flood.say(
                String(
                    format: "%@ ÷ direct: pushes/s median %.2f (rounds: %@), pushes per Prosody CPU-second %.2f",
                    result.phase.name, PhaseResult.median(ratios),
                    ratios.map { String(format: "%.2f", $0) }.joined(separator: ", "),
                    direct.cpuPerPush.prosody / max(1e-9, result.cpuPerPush.prosody)))
        }
        if let component = medians.first(where: { $0.phase.path == .component }) {
            Flood.say(
                String(
                    format: "component CPU per push %.0f µs (median) = %.2f of Prosody's on the direct path (%.0f µs)",
                    component.cpuPerPush.component * 1000,
                    component.cpuPerPush.component / max(1e-9, direct.cpuPerPush.prosody),
                    direct.cpuPerPush.prosody * 1000))
        }
        if let pid = bed.component?.pid {
            Flood.say(String(format: "component peak RSS (VmHWM): %.1f MiB", ProcessFigures.peakResidentMiB(pid: pid)))
        }
        Flood.say(
            "latencies: send → App Server arrival, for messages sent in the measured part, at saturation "
                + "(\(options.inFlight) in flight); CPU: /proc/<pid>/stat user + system over the measured part, "
                + "(cores): CPU seconds per second; medians taken figure by figure over the rounds")
    }

    static func row(_ result: PhaseResult, label: String) -> String {
        Bench.padded(label, 32)
            + String(
                format: "%9.0f %7.0f %7.0f %7.0f %17.3f ms %6.3f ms %5.3f ms %19.2f %8.2f %6.2f",
                result.rate, result.p50, result.p99, result.maximum, result.cpuPerPush.component,
                result.cpuPerPush.prosody, result.cpuPerPush.bench, result.cores.component,
                result.cores.prosody, result.cores.bench)
    }

    /// Pins every thread of `pid` (and the threads it starts later) to `cores`, e.g. "0" or "0,1".
    static func pin(_ pid: Int32, to cores: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["taskset", "--all-tasks", "--cpu-list", "--pid", cores, "\(pid)"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SetupFailure(
                "taskset -a -c -p \(cores) \(pid) exited \(process.terminationStatus) (util-linux installed?)")
        }
    }
}

/// Which way Prosody's pushes go.
enum PushPath: Sendable, Equatable, CaseIterable {
    /// Stock mod_cloud_notify, straight to the App Server.
    case direct
    /// Stock mod_cloud_notify to a component that only passes each publish on to the App Server.
    case relay
    /// Through the bridge and the component.
    case component

    /// The accounts of each path (`d0`…, `r0`…, `a0`…), each with its own node.
    var accountPrefix: String {
        switch self {
        case .direct: "d"
        case .relay: "r"
        case .component: "a"
        }
    }

    var nodePrefix: String { "bench-" + accountPrefix }

    /// The path's push publishes come in the stock form (no apush summary).
    var isStock: Bool { self != .component }
}

struct Phase: Sendable {
    var name: String
    var path: PushPath
    /// The component's CPUs (`taskset`), nil: left as they are.
    var cores: String?

    static let all = [
        Phase(name: "direct (no component)", path: .direct, cores: nil),
        Phase(name: "relay (routing only)", path: .relay, cores: nil),
        Phase(name: "component, 2 cores", path: .component, cores: "0,1"),
        Phase(name: "component, 1 core", path: .component, cores: "0"),
    ]
}

struct PhaseResult {
    var phase: Phase
    var rate: Double
    var p50: Double
    var p99: Double
    var maximum: Double
    var sent: Int
    var pushed: Int
    var latencies: Int
    var unmatched: Int
    var cpuPerPush: (component: Double, prosody: Double, bench: Double)
    var cores: (component: Double, prosody: Double, bench: Double)

    /// The median of each figure over the rounds of one phase (the maximum of the maxima).
    static func median(_ results: [PhaseResult]) -> PhaseResult {
        var median = results[0]
        func middle(_ figure: (PhaseResult) -> Double) -> Double { Self.median(results.map(figure)) }
        median.rate = middle(\.rate)
        median.p50 = middle(\.p50)
        median.p99 = middle(\.p99)
        median.maximum = results.map(\.maximum).max() ?? 0
        median.cpuPerPush = (middle(\.cpuPerPush.component), middle(\.cpuPerPush.prosody), middle(\.cpuPerPush.bench))
        median.cores = (middle(\.cores.component), middle(\.cores.prosody), middle(\.cores.bench))
        return median
    }

    /// The middle value (the mean of the two middle ones for an even count); 0 for none.
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    var line: String {
        String(
            format: "%@: %.0f pushes/s, latency p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d timed); %d sent, %d pushed",
            phase.name, rate, p50, p99, maximum, latencies, sent, pushed)
            + (sent > pushed ? " (\(sent - pushed) never pushed or merged by coalescing)" : "")
            + (unmatched > 0 ? ", \(unmatched) pushes matched no message" : "")
    }
}
