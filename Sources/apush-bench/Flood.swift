import Foundation
import Sealing
import Store
import Synchronization
import XMLStream
import XMPP
import LocalServers

/// `apush-bench flood [COUNT] [DRAIN-LIMIT-SECONDS]`: COUNT publishes (100,000 by default), written
/// as fast as the component's link takes them, while the App Server answers each upstream publish
/// after 1 s. Prints the component's peak RSS, the answers it gave the server, the time until it has
/// nothing in flight, held or waiting for a retry, and the CPU it uses in 10 s of idle afterwards.
///
/// The component runs as its own process (the built `apush-component`), so its memory and CPU are
/// its own; the server is the project's stand-in (StandInComponentServer), which also plays the
/// App Server. A real Prosody would measure Prosody: it cannot produce a hundred thousand pushes a
/// minute, so the component would never be pushed to its caps. Stops by itself: the wait for the
/// drain is bounded (300 s by default), and whatever is left then is reported.
enum Flood {
    static let accounts = 1000
    static let contactsPerAccount = 20
    static let answerDelay = Duration.seconds(1)
    static let batch = 64

    static func run(_ arguments: [String]) async throws {
        let count = Int(arguments.first ?? "") ?? 100_000
        let drainLimit = Duration.seconds(Int(arguments.dropFirst().first ?? "") ?? 300)
        let binary = componentBinary(mode: "flood")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-flood-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storePath = directory.appendingPathComponent("apush.sqlite").path

        let server = try StandInComponentServer(
            componentJID: "apush.example.org",
            secret: "flood-\(UInt64.random(in: .min ... .max))")
        defer { server.stop() }
        let tally = Tally()
        server.handleEveryStanza { stanza in tally.take(stanza, server: server) }
        let component = try startComponent(binary, server: server, storePath: storePath, directory: directory)
        try await server.waitForConnection(timeout: .seconds(20))
        say(
            "apush-bench flood: \(count) publishes, \(accounts) accounts × \(contactsPerAccount) chats, "
                + "the App Server answering each push after \(answerDelay), drain bounded at \(drainLimit)")

        let started = ContinuousClock.now
        let cpuBefore = ProcessFigures.cpuSeconds(pid: component.pid)
        let key = KeyPair.generate().publicKey
        let written = await write(count, to: server) { publish($0, key: key) }
        say(
            String(
                format: "  written in %.1f s (%.0f/s, as the link took them)", seconds(written - started),
                Double(count) / seconds(written - started)))

        let deadline = started + drainLimit
        let store = try SQLitePushStore(.file(path: storePath))
        var drained: ContinuousClock.Instant?
        var allAnswered: ContinuousClock.Instant?
        var left = "?"
        while ContinuousClock.now < deadline {
            // Held pushes, not open windows: a window stays open one more length after its last push.
            let held = (try? await store.dueWindows(at: .max, limit: 1_000_000).filter { $0.held != nil }.count) ?? -1
            let retries: Bool
            do { retries = try await store.nextRetry() != nil } catch { retries = true }
            let figures = tally.figures
            if figures.answered == count, allAnswered == nil { allAnswered = .now }
            left =
                "\(count - figures.answered) publishes unanswered, \(figures.outstanding) pushes awaiting the App Server, "
                + "\(held) pushes held, \(retries ? "some" : "no") retries stored"
            if figures.answered == count, figures.outstanding == 0, held == 0, !retries {
                drained = .now
                break
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        let cpuFlood = ProcessFigures.cpuSeconds(pid: component.pid) - cpuBefore
        let figures = tally.figures
        let waits = figures.waitConditions.sorted { $0.value > $1.value }.map { "\($0.value) \($0.key)" }
        say(
            "  answers to the server: \(figures.results) result, \(figures.waits) wait"
                + (waits.isEmpty ? "" : " (\(waits.joined(separator: ", ")))") + ", \(figures.others) other"
                + (figures.otherConditions.isEmpty
                    ? "" : " (\(figures.otherConditions.sorted().joined(separator: ", ")))"))
        if let allAnswered {
            say(String(format: "  every publish answered after %.1f s", seconds(allAnswered - started)))
        }
        say(
            "  pushes the App Server took: \(figures.pushes) (at most \(figures.peakOutstanding) awaiting its answer at once)"
        )
        if let drained {
            say(
                String(
                    format: "  drained (all answered, nothing in flight, held or retried) after %.1f s",
                    seconds(drained - started)))
        } else {
            say("  NOT drained within \(drainLimit): \(left)")
        }
        say(String(format: "  component CPU during the flood: %.1f s", cpuFlood))
        say(String(format: "  component peak RSS: %.1f MiB", ProcessFigures.peakResidentMiB(pid: component.pid)))

        let idleStart = ProcessFigures.cpuSeconds(pid: component.pid)
        let pushesBeforeIdle = figures.pushes
        try await Task.sleep(for: .seconds(10))
        let idle = ProcessFigures.cpuSeconds(pid: component.pid) - idleStart
        say(
            String(format: "  component CPU in 10 s of idle afterwards: %.2f s", idle)
                + (tally.figures.pushes > pushesBeforeIdle ? " (still pushing: not idle)" : ""))
        say(String(format: "  component RSS after the idle: %.1f MiB", ProcessFigures.residentMiB(pid: component.pid)))
        await component.stop()
        printLogSummary(directory.appendingPathComponent("component.log"))
    }

    /// The component's warnings and errors, counted by what they say (timestamps and numbers cut).
    static func printLogSummary(_ log: URL) {
        guard let text = try? String(contentsOf: log, encoding: .utf8) else { return }
        let lines = text.split(separator: "\n")
        // "2026-12-01T09:46:33.307Z ERROR apush: message": the level and the message.
        let entries = lines.compactMap { line -> (level: Substring, message: Substring)? in
            let words = line.split(separator: " ", maxSplits: 2)
            return words.count == 3 ? (words[1], words[2]) : nil
        }
        printKinds("component log: \(lines.count) lines", entries)
    }

    /// `heading`, then the six commonest kinds of entry: the level and the message's start, digits cut.
    static func printKinds(_ heading: String, _ entries: [(level: Substring, message: Substring)]) {
        var kinds: [String: Int] = [:]
        for entry in entries {
            let message = String(entry.message.prefix(90)).map { $0.isNumber ? "#" : $0 }
            kinds["\(entry.level) \(String(message))", default: 0] += 1
        }
        say("  " + heading)
        for (kind, count) in kinds.sorted(by: { $0.value > $1.value }).prefix(6) {
            say("    \(count) × \(kind)")
        }
    }

    /// The built apush-component beside this benchmark; exits when it is missing.
    static func componentBinary(mode: String) -> URL {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("apush-component")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            say("apush-bench \(mode): \(binary.path) is missing: build it first (swift build -c release)")
            exit(1)
        }
        return binary
    }

    /// Starts the component process on the store at `storePath`, linked to `server`, its log in `directory`.
    static func startComponent(
        _ binary: URL, server: StandInComponentServer, storePath: String, directory: URL, admin: String? = nil
    ) throws -> ServerProcess {
        var environment = [
            "APUSH_COMPONENT_JID": server.componentJID, "APUSH_COMPONENT_SECRET": server.secret,
            "APUSH_SERVER": "127.0.0.1:\(server.port)", "APUSH_DOMAINS": "example.org",
            "APUSH_APP_SERVER": "push.example.org", "APUSH_STORE": storePath, "APUSH_LOG": "warning",
        ]
        environment["APUSH_ADMINS"] = admin
        return try ServerProcess(
            name: "apush-component", executable: binary, arguments: ["run"], environment: environment,
            workingDirectory: directory, outputURL: directory.appendingPathComponent("component.log"))
    }

    /// Writes `count` publishes (`publish(index)`) in batches on a thread of its own: each write blocks
    /// while the component's socket buffer is full, so the pace is the component's, or at most
    /// `perSecond` when given.
    static func write(
        _ count: Int, to server: StandInComponentServer, perSecond: Int? = nil,
        publish: @escaping @Sendable (Int) -> String
    ) async -> ContinuousClock.Instant {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                let started = ContinuousClock.now
                var index = 0
                while index < count {
                    let end = min(count, index + batch)
                    let text = (index..<end).map(publish).joined()
                    do {
                        try server.sendRaw(text)
                    } catch {
                        say("  the link closed after \(index) publishes: \(error)")
                        break
                    }
                    index = end
                    if let perSecond {
                        let due = started + .seconds(Double(index) / Double(perSecond))
                        let wait = ContinuousClock.now.duration(to: due)
                        if wait > .zero { Thread.sleep(forTimeInterval: seconds(wait)) }
                    }
                }
                done.resume()
            }
        }
        return .now
    }

    /// Publish `index`: account `index % accounts` (one registration each), from one of its contacts.
    static func publish(_ index: Int, key: [UInt8]) -> String {
        let account = index % accounts
        let contact = (index / accounts) % contactsPerAccount
        return Bench.publish(
            token: "flood-token-\(account)", sender: "contact\(contact)@example.org", key: key,
            account: "account\(account)@example.org", id: "flood-\(index)")
    }

    /// Each figure as soon as it is known, unbuffered, even into a file.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// What came back over the link: the component's answers to the publishes, and its upstream pushes,
/// each answered by the stand-in App Server after `answerDelay`.
final class Tally: Sendable {
    struct Figures: Sendable {
        var results = 0
        var waits = 0
        var waitConditions: [String: Int] = [:]
        var others = 0
        var otherConditions: Set<String> = []
        var pushes = 0
        var outstanding = 0
        var peakOutstanding = 0
        var answered: Int { results + waits + others }
    }

    private let state = Mutex(Figures())
    let answerDelay: Duration

    init(answerDelay: Duration = Flood.answerDelay) { self.answerDelay = answerDelay }

    var figures: Figures { state.withLock { $0 } }

    func take(_ stanza: Element, server: StandInComponentServer) {
        if stanza.isIQRequest {
            guard let reply = stanza.resultReply() else { return }
            state.withLock { figures in
                figures.pushes += 1
                figures.outstanding += 1
                figures.peakOutstanding = max(figures.peakOutstanding, figures.outstanding)
            }
            Task {
                if self.answerDelay > .zero { try? await Task.sleep(for: self.answerDelay) }
                try? server.send(reply)
                self.state.withLock { $0.outstanding -= 1 }
            }
        } else if stanza.name == "iq", stanza.stanzaID?.hasPrefix("flood-") == true {
            let error = StanzaError(stanza: stanza)
            state.withLock { figures in
                switch error?.type {
                case nil: figures.results += 1
                case .wait?:
                    figures.waits += 1
                    figures.waitConditions[error?.condition.rawValue ?? "", default: 0] += 1
                case let type?:
                    figures.others += 1
                    figures.otherConditions.insert("\(type.rawValue)/\(error?.condition.rawValue ?? "")")
                }
            }
        }
    }
}

/// Figures of another process, from /proc.
enum ProcessFigures {
    /// User and system CPU seconds so far.
    static func cpuSeconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // After "pid (comm)": state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func peakResidentMiB(pid: Int32) -> Double { statusKiB("VmHWM", pid: pid) / 1024 }
    static func residentMiB(pid: Int32) -> Double { statusKiB("VmRSS", pid: pid) / 1024 }

    private static func statusKiB(_ field: String, pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return 0 }
        return Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}
