import BlockingWork
import Foundation
import Testing
import Sockets
import XMPP
import LocalServers
import TestSupport

/// The `apush-component` binary as an operator meets it: usage, check-config, a bad config, and a
/// graceful stop on SIGTERM while connected to a real Prosody.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExecutableTests {
    static let binary = PushTestbed.componentBinary

    struct Run: Sendable {
        var status: Int32
        var output: String
    }

    /// Runs the binary with exactly `environment` to its end, on a thread of its own: reading its output
    /// and waiting for it block, which on the cooperative pool would hold up the other suites' tasks.
    private func run(_ arguments: [String], environment: [String: String] = [:]) async throws -> Run {
        guard FileManager.default.isExecutableFile(atPath: Self.binary.path) else {
            throw ServerProcessError(
                .notInstalled, "\(Self.binary.path) is missing: run `swift build --build-tests` first")
        }
        return try await BlockingWork.run {
            let process = Process()
            process.executableURL = Self.binary
            process.arguments = arguments
            process.environment = environment
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Run(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
        }
    }

    @Test func helpAndVersionExitZero() async throws {
        let help = try await run(["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("check-config"))
        let version = try await run(["--version"])
        #expect(version.status == 0)
        #expect(version.output.hasPrefix("apush-component "))
    }

    @Test(arguments: [
        ["bogus"], ["--config"], ["run", "--nonsense"], ["check-config", "--config", "a", "--config", "b"],
    ])
    func usageErrorsExit64(arguments: [String]) async throws {
        let result = try await run(arguments)
        #expect(result.status == 64)
        #expect(result.output.contains("usage:"))
    }

    @Test func aBadConfigurationFailsAtStartNamingTheKey() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("apush-bad-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try
            #"{"component": {"jid": "apush.localhost", "secret": "s"}, "domains": ["localhost"], "appServer": "push.localhost", "push": {"coalesceSeconds": -1}}"#
            .write(to: file, atomically: true, encoding: .utf8)
        let result = try await run(["run", "--config", file.path])
        #expect(result.status == 78)
        #expect(result.output.contains("push.coalesceSeconds"))
        let missing = try await run(["check-config"], environment: ["APUSH_COMPONENT_JID": "apush.localhost"])
        #expect(missing.status == 78)
        #expect(missing.output.contains("component.secret"))
    }

    /// Issue 20, item 7: an expiry of registrations out of its bounds stops the start, naming the key.
    @Test(arguments: [0, 3651])
    func aRegistrationExpiryOutOfItsBoundsFailsAtStartNamingTheKey(days: Int) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("apush-bad-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try
            #"{"component": {"jid": "apush.localhost", "secret": "s"}, "domains": ["localhost"], "appServer": "push.localhost", "push": {"registrationExpiryDays": \#(days)}}"#
            .write(to: file, atomically: true, encoding: .utf8)
        let result = try await run(["check-config", "--config", file.path])
        #expect(result.status == 78)
        #expect(result.output.contains("push.registrationExpiryDays"), "\(result.output)")
        #expect(result.output.contains("must be from 1 to 3650"), "\(result.output)")
    }

    /// A store that can never work stops the component at start, naming the key; a disk that refuses
    /// for now does not (FaultsEndToEndTests: a read-only store at start is answered wait, then opens).
    @Test func aStoreInADirectoryThatDoesNotExistFailsAtStartNamingTheKey() async throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apush-missing-\(UUID().uuidString)")
        let result = try await run(
            ["run"],
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s", "APUSH_DOMAINS": "localhost",
                "APUSH_APP_SERVER": "push.localhost", "APUSH_STORE": missing.appendingPathComponent("s.sqlite").path,
            ])
        #expect(result.status == 78)
        #expect(
            result.output.contains("configuration key 'store': the directory \(missing.path)/ does not exist"),
            "\(result.output)")
    }

    /// An operations endpoint that cannot listen stops the start, naming the address.
    @Test func aTakenHTTPPortStopsTheStart() async throws {
        let taken = try TCPListener(onAccept: { $0.close() })
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("apush-\(UUID()).sqlite")
        defer {
            taken.close()
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
        }
        let result = try await run(
            ["run"],
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s",
                "APUSH_DOMAINS": "localhost", "APUSH_APP_SERVER": "push.localhost",
                "APUSH_STORE": store.path,
                "APUSH_HTTP": "127.0.0.1:\(taken.port)",
            ])
        #expect(result.status == 70)
        #expect(result.output.contains("cannot start: bind(127.0.0.1:\(taken.port)) failed"), "\(result.output)")
    }

    /// `store` may be a PostgreSQL URL; check-config shows it without its password.
    @Test func checkConfigShowsAPostgreSQLStoreWithoutItsPassword() async throws {
        let result = try await run(
            ["check-config"],
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s", "APUSH_DOMAINS": "localhost",
                "APUSH_APP_SERVER": "push.localhost", "APUSH_STORE": "postgresql://apush:hunter2@db.example.org/apush",
            ])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("store        postgresql://apush:***@db.example.org/apush"))
        #expect(!result.output.contains("hunter2"))
    }

    /// An SQLite store's commits wait for the disk unless the operator says otherwise; a PostgreSQL store
    /// has its server's own setting, so asking it for `normal` is a configuration error naming the key.
    @Test func storeSynchronousIsShownAndRefusedForPostgreSQL() async throws {
        let environment = [
            "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s", "APUSH_DOMAINS": "localhost",
            "APUSH_APP_SERVER": "push.localhost", "APUSH_STORE": "/var/lib/apush-component/apush.sqlite",
        ]
        let sqlite = try await run(["check-config"], environment: environment)
        #expect(sqlite.output.contains("store        /var/lib/apush-component/apush.sqlite, synchronous=full"))
        var postgresql = environment
        postgresql["APUSH_STORE"] = "postgresql://apush@db.example.org/apush"
        postgresql["APUSH_STORE_SYNCHRONOUS"] = "normal"
        let refused = try await run(["check-config"], environment: postgresql)
        #expect(refused.status == 78)
        #expect(refused.output.contains("configuration key 'storeSynchronous'"), "\(refused.output)")
    }

    /// Out of descriptors, accept(2) fails (EMFILE): the operations endpoint pauses and goes on, says so
    /// once in the log, and counts it on /health; once descriptors are free again it answers.
    @Test func theOperationsEndpointOutlivesRunningOutOfDescriptors() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-fd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("component.log")
        let httpPort = try TestPorts.next()
        let component = try ServerProcess(
            name: "apush-component", executable: Self.binary, arguments: ["run"],
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s",
                // Nobody listens there: the component keeps trying to connect, which is fine here.
                "APUSH_SERVER": "127.0.0.1:\(try TestPorts.next())", "APUSH_DOMAINS": "localhost",
                "APUSH_APP_SERVER": "push.localhost", "APUSH_STORE": directory.appendingPathComponent("s.sqlite").path,
                "APUSH_HTTP": "127.0.0.1:\(httpPort)",
            ],
            workingDirectory: directory, outputURL: log)
        do {
            try await waitUntil("the endpoint answers") {
                (try? await HTTPTestClient.request("/health", port: UInt16(httpPort))) != nil
            }
            // No descriptor left to accept with: the limit is what the process has open now.
            let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(component.pid)/fd").count
            let previous = try await DescriptorLimit.set(open, of: component.pid)
            var starved: [TCPConnection] = []
            for _ in 0..<3 {
                starved.append(try await TCPConnection.connect(host: "127.0.0.1", port: UInt16(httpPort)))
            }
            try await waitUntil("the endpoint says it cannot accept") {
                (try? String(contentsOf: log, encoding: .utf8))?.contains("cannot accept connections") ?? false
            }
            _ = try await DescriptorLimit.set(previous, of: component.pid)
            for connection in starved { connection.close() }
            let health = try await HTTPTestClient.request("/health", port: UInt16(httpPort))
            let json = try JSONSerialization.jsonObject(with: Data(health.body.utf8)) as? [String: Any]
            #expect((json?["httpAcceptFailures"] as? Int ?? 0) >= 1, "\(health.body)")
            #expect(try String(contentsOf: log, encoding: .utf8).contains("accepting connections again"))
        } catch {
            Issue.record(error)
        }
        await component.stop()
    }

    @Test func theExampleConfigurationIsValid() async throws {
        let example = PushTestbed.repository.appendingPathComponent("config/apush-component.example.json")
        let result = try await run(["check-config", "--config", example.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("configuration is valid"))
    }

    /// In either log format: JSON lines are each one object with the text line's fields.
    @Test(arguments: ["text", "json"])
    func itRunsFromTheEnvironmentAloneAndStopsGracefullyOnSIGTERM(logFormat: String) async throws {
        let secret = "exec-\(UInt32.random(in: .min ... .max))"
        let prosody = try ProsodyServer(componentJID: "apush.localhost", componentSecret: secret)
        try await prosody.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-exec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let log = directory.appendingPathComponent("component.log")
        let httpPort = try TestPorts.next()
        var component: ServerProcess?
        do {
            component = try ServerProcess(
                name: "apush-component", executable: Self.binary, arguments: ["run"],
                environment: [
                    "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": secret,
                    "APUSH_SERVER": "127.0.0.1:\(prosody.componentPort)", "APUSH_DOMAINS": "localhost",
                    "APUSH_APP_SERVER": "push.localhost",
                    "APUSH_STORE": directory.appendingPathComponent("s.sqlite").path,
                    "APUSH_LOG_FORMAT": logFormat, "APUSH_HTTP": "127.0.0.1:\(httpPort)",
                ],
                workingDirectory: directory, outputURL: log)
            try await expectGracefulStop(
                of: component!, log: log, store: directory.appendingPathComponent("s.sqlite"),
                httpPort: UInt16(httpPort))
            if logFormat == "json" {
                let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
                #expect(lines.count >= 3)
                for line in lines {
                    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    #expect(
                        object?["level"] is String && object?["message"] is String && object?["time"] is String,
                        "not a JSON log line: \(line)")
                }
            }
        } catch {
            Issue.record(error)
        }
        await component?.stop()
        await prosody.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func expectGracefulStop(of component: ServerProcess, log: URL, store: URL, httpPort: UInt16) async throws {
        try await waitUntil("the component connects") {
            (try? String(contentsOf: log, encoding: .utf8))?.contains("connected to 127.0.0.1") ?? false
        }
        #expect(try await HTTPTestClient.request("/health", port: httpPort).status == 200)
        kill(component.pid, SIGTERM)
        try await waitUntil("the component exits", timeout: .seconds(10)) { await !component.isRunning }
        #expect(await component.terminationStatus == 0)
        let output = try String(contentsOf: log, encoding: .utf8)
        #expect(output.contains("SIGTERM received: stopping"))
        #expect(output.contains("stopped"))
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}

/// Another process's soft limit of open descriptors, set with util-linux's prlimit(1) (glibc's prlimit(2)
/// is a GNU extension Swift does not see), for a test to starve it.
private enum DescriptorLimit {
    /// Sets the soft limit; returns the one it replaced.
    static func set(_ soft: Int, of pid: Int32) async throws -> Int {
        let previous = try await prlimit(["--pid", "\(pid)", "--nofile", "--output", "SOFT", "--noheadings"])
        guard let current = Int(previous.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ServerProcessError(.commandFailed, "prlimit printed \(previous)")
        }
        _ = try await prlimit(["--pid", "\(pid)", "--nofile=\(soft):"])
        return current
    }

    private static func prlimit(_ arguments: [String]) async throws -> String {
        try await BlockingWork.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw ServerProcessError(.commandFailed, "prlimit \(arguments) exited \(process.terminationStatus)")
            }
            return output
        }
    }
}
