import Foundation
import SQLCore
import SQLite
import Sealing
import Store
import XMLStream
import XMPP
import LocalServers

/// `apush-bench scale [REGISTRATIONS] [PUBLISHES]`: the component with a million registrations
/// (1,000,000 by default) in its store. Fills a WAL store in one transaction, then prints:
/// - the time from exec to the completed handshake of the component process, on that store and on an
///   empty one (several starts each);
/// - its peak and current RSS after start, after a steady load (PUBLISHES / 2 publishes at 250 a
///   second, the App Server answering at once) and after a flood (PUBLISHES, 20,000 by default,
///   written as fast as the link takes them, the App Server answering after `Flood.answerDelay`), each
///   publish to a registration picked at random;
/// - the time of the commands that look registrations up, through the link (an account's own list,
///   the operator's paged listing at its first, middle and last page, a lookup by fingerprint), and of
///   the store calls under them, in this process;
/// - the time of the upgrade from schema version 3, which computes every registration's fingerprint.
///
/// The registrations are those of a real server's users: one domain, accounts with 1-3 devices each,
/// FCM-sized and APNs-sized tokens. Every figure is printed; none is checked: a timing never fails it.
enum Scale {
    static let domain = "example.org"
    static let admin = "admin@example.org"
    static let starts = 5
    static let repeats = 5

    static func run(_ arguments: [String]) async throws {
        let count = max(1, Int(arguments.first ?? "") ?? 1_000_000)
        let publishes = max(0, Int(arguments.dropFirst().first ?? "") ?? 20_000)
        let binary = Flood.componentBinary(mode: "scale")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-scale-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storePath = directory.appendingPathComponent("apush.sqlite").path
        let emptyPath = directory.appendingPathComponent("empty.sqlite").path
        let device = KeyPair.generate()
        say(
            "apush-bench scale: \(count) registrations of \(FilledRegistration.accounts(count)) accounts in one "
                + "domain, a WAL store (\(Bench.isDebug ? "DEBUG build: use -c release" : "release build"))")

        let fillTime = try fill(storePath, count: count, deviceKey: device.publicKey)
        let fileSize = (try? FileManager.default.attributesOfItem(atPath: storePath)[.size] as? Int) ?? 0
        say(
            String(
                format: "  filled in %.1f s (one transaction), the file is %.0f MiB", Flood.seconds(fillTime),
                Double(fileSize) / 1_048_576))

        let server = try StandInComponentServer(
            componentJID: "apush.example.org", secret: "scale-\(UInt64.random(in: .min ... .max))")
        defer { server.stop() }

        _ = try SQLitePushStore(.file(path: emptyPath))
        let (emptyStarts, _) = try await timeStarts(
            binary, on: emptyPath, server: server, directory: directory, keepLast: false)
        report("start to connected, empty store", emptyStarts)
        let (fullStarts, running) = try await timeStarts(
            binary, on: storePath, server: server, directory: directory, keepLast: true)
        report("start to connected, \(count) registrations", fullStarts)
        guard let component = running else { return }
        say(
            String(
                format: "  component RSS after start: %.1f MiB (peak %.1f MiB)",
                ProcessFigures.residentMiB(pid: component.pid), ProcessFigures.peakResidentMiB(pid: component.pid)))

        // First a steady load the component keeps up with (the App Server answering at once), then a
        // flood against a slow App Server, which fills every cap: the peak after each is that load's.
        if publishes > 0 {
            for load in [
                Load(count: publishes / 2, perSecond: pacedRate, answerDelay: .zero),
                Load(count: publishes, perSecond: nil, answerDelay: Flood.answerDelay),
            ] {
                try await run(load, registrations: count, key: device.publicKey, server: server)
                say(
                    String(
                        format: "  component RSS: peak %.1f MiB, %.1f MiB after this load",
                        ProcessFigures.peakResidentMiB(pid: component.pid),
                        ProcessFigures.residentMiB(pid: component.pid)))
            }
        }

        say("  through the link (the command's answer, from submit to result):")
        let pages = (count + 49) / 50
        var random = SplitMix64(seed: 7)
        let someAccount = FilledRegistration(Int(random.next() % UInt64(count))).account
        try await timeCommand(
            "an account's own registrations (#registrations)", node: "registrations",
            from: "\(FilledRegistration.accountJID(someAccount))/phone", fields: nil, server: server)
        for page in [1, (pages + 1) / 2, pages] {
            try await timeCommand(
                "the operator's listing, page \(page) of \(pages)", node: "admin-registrations", from: admin,
                fields: [("page", String(page))], server: server)
        }
        for (label, number) in [("the first", 0), ("a middle", count / 2), ("the last", count - 1)] {
            try await timeCommand(
                "the operator's lookup by fingerprint, \(label) registration", node: "admin-registrations",
                from: admin, fields: [("fingerprint", Fingerprint.of(FilledRegistration(number).token))],
                server: server, repeats: 3)
        }
        say(
            String(
                format: "  component RSS at the end: %.1f MiB (peak %.1f MiB)",
                ProcessFigures.residentMiB(pid: component.pid), ProcessFigures.peakResidentMiB(pid: component.pid)))
        await component.stop()
        Flood.printLogSummary(directory.appendingPathComponent("component.log"))

        try await timeStoreCalls(storePath, count: count)
        let upgrade = try timeUpgradeFromVersionThree(storePath)
        say(
            String(
                format: "  upgrading this store from schema version 3 (every fingerprint computed, once): %.1f s",
                Flood.seconds(upgrade)))
    }

    /// Takes the store back to schema version 3 (no fingerprints kept), then times the store's open,
    /// which migrates it: what the first start after an upgrade costs.
    static func timeUpgradeFromVersionThree(_ path: String) throws -> Duration {
        do {
            let database = try Database(.file(path: path))
            try database.executeScript(
                """
                DROP INDEX registrations_by_fingerprint;
                ALTER TABLE registrations DROP COLUMN fingerprint;
                PRAGMA user_version = 3;
                PRAGMA wal_checkpoint(TRUNCATE);
                """)
        }
        let started = ContinuousClock.now
        _ = try SQLitePushStore(.file(path: path))
        return ContinuousClock.now - started
    }

    /// Creates the schema through the store, then inserts `count` registrations in one transaction
    /// with one prepared statement (the store's own `register` is one transaction each: minutes for a
    /// million). Ends with the WAL checkpointed and the connection closed, as a stopped component leaves it.
    static func fill(_ path: String, count: Int, deviceKey: [UInt8]) throws -> Duration {
        _ = try SQLitePushStore(.file(path: path))
        let started = ContinuousClock.now
        let database = try Database(.file(path: path))
        // Only for the fill: the indexes' pages stay in memory while a million random keys go in.
        try database.executeScript("PRAGMA cache_size = -1048576")
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var random = SplitMix64(seed: 1)
        try database.transaction { database in
            for number in 0..<count {
                let registration = FilledRegistration(number)
                let created = now - Int64(random.next() % 31_536_000_000)
                try database.execute(
                    """
                    INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                        collapse_key, created_at, updated_at, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(domain), .text(registration.token), .text(FilledRegistration.pushModule),
                        .text(FilledRegistration.accountJID(registration.account)), .blob(deviceKey),
                        .text(CallsMode.none.rawValue), false, .blob(random.bytes(32)), .integer(created),
                        .integer(created), .text(Fingerprint.of(registration.token)),
                    ])
            }
        }
        try database.executeScript("PRAGMA wal_checkpoint(TRUNCATE)")
        return ContinuousClock.now - started
    }

    /// Starts the component on `storePath` `starts` times, each timed from the spawn to the handshake the
    /// server completed; every run but the last (when `keepLast`) is stopped.
    static func timeStarts(
        _ binary: URL, on storePath: String, server: StandInComponentServer, directory: URL, keepLast: Bool
    ) async throws -> ([Duration], ServerProcess?) {
        var times: [Duration] = []
        for run in 1...starts {
            let started = ContinuousClock.now
            let component = try Flood.startComponent(
                binary, server: server, storePath: storePath, directory: directory, admin: admin)
            _ = try await server.waitForConnection(timeout: .seconds(60))
            times.append(ContinuousClock.now - started)
            if keepLast, run == starts { return (times, component) }
            await component.stop()
        }
        return (times, nil)
    }

    /// Publishes to registrations picked at random, each for a new chat (so each is pushed), at most
    /// `perSecond` (nil: as fast as the link takes them), the App Server answering each push after
    /// `answerDelay`.
    struct Load {
        let count: Int
        let perSecond: Int?
        let answerDelay: Duration
    }

    /// A rate this machine's component keeps up with among a million registrations, with room to spare.
    static let pacedRate = 250

    /// Runs `load` and waits (at most 120 s) until each publish is answered and no push awaits the App Server.
    static func run(_ load: Load, registrations: Int, key: [UInt8], server: StandInComponentServer) async throws {
        let tally = Tally(answerDelay: load.answerDelay)
        server.handleEveryStanza { stanza in tally.take(stanza, server: server) }
        // From here the commands' answers reach `request` again.
        defer { server.handleEveryStanza(nil) }
        let started = ContinuousClock.now
        let name = load.perSecond.map { "\($0)/s" } ?? "flood"
        _ = await Flood.write(load.count, to: server, perSecond: load.perSecond) { index in
            var random = SplitMix64(seed: UInt64(index) &+ (load.perSecond == nil ? 2_000_003 : 1_000_003))
            let registration = FilledRegistration(Int(random.next() % UInt64(registrations)))
            return Bench.publish(
                token: registration.token, sender: "contact\(index)@example.org", key: key,
                account: FilledRegistration.accountJID(registration.account), id: "flood-scale-\(name)-\(index)")
        }
        let deadline = started + .seconds(120)
        var allAnswered: ContinuousClock.Instant?
        while ContinuousClock.now < deadline {
            let figures = tally.figures
            if figures.answered >= load.count, allAnswered == nil { allAnswered = .now }
            if figures.answered >= load.count, figures.outstanding == 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let figures = tally.figures
        let waits = figures.waitConditions.sorted { $0.value > $1.value }.map { "\($0.value) \($0.key)" }
        say(
            "  load: \(load.count) publishes (\(load.perSecond.map { "\($0)/s" } ?? "as fast as the link takes them")), "
                + "the App Server answering \(load.answerDelay == .zero ? "at once" : "after \(load.answerDelay)"): "
                + "\(figures.results) result, \(figures.waits) wait"
                + (waits.isEmpty ? "" : " (\(waits.joined(separator: ", ")))") + ", \(figures.others) other"
                + (allAnswered.map { String(format: ", all answered after %.1f s", Flood.seconds($0 - started)) } ?? "")
        )
        say(
            String(
                format: "  pushes the App Server took: %d in %.1f s (%d awaiting its answer at the end)",
                figures.pushes,
                Flood.seconds(.now - started), figures.outstanding))
    }

    /// Runs a command's first stage, then (with `fields`) submits them; prints the median time of the
    /// last stage over `repeats` runs, and its answer's title or error.
    static func timeCommand(
        _ label: String, node: String, from requester: String, fields: [(String, String)]?,
        server: StandInComponentServer, repeats: Int = repeats
    ) async throws {
        let node = "urn:xmpp:apush:0#" + node
        var times: [Duration] = []
        var outcome = ""
        for _ in 0..<repeats {
            var started = ContinuousClock.now
            var answer = try await server.request(commandIQ(node, from: requester), timeout: .seconds(600))
            if let fields {
                let shown = answer.child("command", namespace: Namespace.commands)
                var command = Element(
                    "command", namespace: Namespace.commands,
                    [
                        "node": node, "action": AdHocAction.complete.rawValue,
                        "sessionid": shown?[attribute: "sessionid"],
                    ])
                // As a client does: the stage's own hidden fields (its session state) go back with the form.
                let hidden = shown?.hiddenFormFields ?? []
                command.append(
                    DataForm(type: .submit, formType: nil, fields: fields.map { .value($0.0, $0.1) } + hidden).element)
                started = ContinuousClock.now
                answer = try await server.request(commandIQ(node, from: requester, command), timeout: .seconds(600))
            }
            times.append(ContinuousClock.now - started)
            outcome =
                StanzaError(stanza: answer).map { "error: \($0.text ?? $0.condition.rawValue)" }
                ?? answer.child("command", namespace: Namespace.commands)?.child("x", namespace: "jabber:x:data")?
                .child("title")?.text ?? "done"
        }
        say("    " + Bench.padded(label, 62) + milliseconds(median(times)) + "  (\(outcome); median of \(repeats))")
    }

    static func commandIQ(_ node: String, from requester: String, _ command: Element? = nil) throws -> Element {
        .iq(
            type: .set, id: "scale-\(UInt64.random(in: .min ... .max))", from: try JID(requester),
            to: try JID("apush.example.org"),
            payload: command
                ?? Element(
                    "command", namespace: Namespace.commands,
                    ["node": node, "action": AdHocAction.execute.rawValue]))
    }

    /// The store calls under those commands, on the same file from this process (median of many).
    static func timeStoreCalls(_ path: String, count: Int) async throws {
        let store = try SQLitePushStore(.file(path: path))
        var random = SplitMix64(seed: 11)
        let picks = (0..<200).map { _ in FilledRegistration(Int(random.next() % UInt64(count))) }
        say("  store calls in this process (median):")
        var times: [Duration] = []
        for pick in picks {
            let started = ContinuousClock.now
            let found = try await store.registrations(
                matching: RegistrationFilter(account: FilledRegistration.accountJID(pick.account), domain: domain),
                limit: 1000, offset: 0)
            times.append(ContinuousClock.now - started)
            precondition(found.contains { $0.token == pick.token }, "the account's registrations include the pick")
        }
        say("    " + Bench.padded("registrations(matching: account), 200 accounts", 62) + milliseconds(median(times)))
        times = []
        for _ in 0..<repeats {
            let started = ContinuousClock.now
            _ = try await store.countRegistrations(matching: RegistrationFilter())
            times.append(ContinuousClock.now - started)
        }
        say("    " + Bench.padded("countRegistrations(matching: all)", 62) + milliseconds(median(times)))
        let pages = (count + 49) / 50
        for page in [1, (pages + 1) / 2, pages] {
            times = []
            for _ in 0..<repeats {
                let started = ContinuousClock.now
                _ = try await store.registrations(matching: RegistrationFilter(), limit: 50, offset: (page - 1) * 50)
                times.append(ContinuousClock.now - started)
            }
            say(
                "    " + Bench.padded("registrations(matching: all), page \(page) of \(pages)", 62)
                    + milliseconds(median(times)))
        }
    }

    static func report(_ label: String, _ times: [Duration]) {
        say(
            "  " + Bench.padded(label, 64) + "median " + milliseconds(median(times)) + ", min "
                + milliseconds(times.min() ?? .zero) + ", max " + milliseconds(times.max() ?? .zero)
                + " (\(times.count) starts)")
    }

    static func median(_ times: [Duration]) -> Duration {
        times.isEmpty ? .zero : times.sorted()[times.count / 2]
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%8.2f ms", Flood.seconds(duration) * 1000)
    }

    static func say(_ line: String) { Flood.say(line) }
}

/// Registration `number` of the filled store, derived from the number alone, so the benchmark picks
/// any of a million without keeping them: accounts in blocks of three hold 1, 2 and 3 devices, and
/// the tokens alternate between FCM's size (163 characters) and APNs' (64 hex digits).
struct FilledRegistration {
    static let pushModule = "bench"
    let account: Int
    let token: String

    init(_ number: Int) {
        let (block, slot) = number.quotientAndRemainder(dividingBy: 6)
        account = 3 * block + (slot == 0 ? 0 : slot < 3 ? 1 : 2)
        var random = SplitMix64(seed: UInt64(number) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
        if number.isMultiple(of: 2) {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
            let characters = (0..<156).map { _ in alphabet[Int(random.next() % 64)] }
            token =
                String(decoding: characters[..<22], as: UTF8.self) + ":APA91b"
                + String(decoding: characters[22...], as: UTF8.self)
        } else {
            token = random.bytes(32).map { String($0, radix: 16).leftPadded(2) }.joined()
        }
    }

    static func accountJID(_ account: Int) -> String { "user\(account)@\(Scale.domain)" }

    /// How many accounts hold `count` registrations.
    static func accounts(_ count: Int) -> Int { FilledRegistration(count - 1).account + 1 }
}

/// A small fast generator, seeded, so every run fills and picks the same registrations.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
