import Foundation
import Testing

@testable import LocalServers

/// Starts the real servers installed on the machine. A missing server fails these tests: never skipped.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ServerLauncherTests {
    @Test(arguments: [ProsodyServer.Release.v0_12, .v13])
    func prosodyServesPortsRegistersRestartsAndStops(release: ProsodyServer.Release) async throws {
        let server = try ProsodyServer(
            release: release, componentJID: "apush.localhost", componentSecret: "launcher-secret")
        try await server.start()
        // The release's own code runs, not the other's (13.0's launchers have their paths patched).
        let version = release == .v13 ? "13.0." : "0.12."
        #expect(await server.logContents(lastLines: nil).contains("Hello and welcome to Prosody version \(version)"))
        await expectLifecycle(of: server) {
            let accounts = server.baseDirectory.appendingPathComponent("data/localhost/accounts")
            return FileManager.default.fileExists(atPath: accounts.appendingPathComponent("alice.dat").path)
        }
    }

    /// An operator's level keeps Prosody's debug lines out of its log; the tests' default keeps them.
    /// The release states the version it runs.
    @Test(arguments: [ProsodyServer.Release.v0_12, .v13])
    func prosodyLogsAtTheLevelAskedAndStatesItsVersion(release: ProsodyServer.Release) async throws {
        #expect(release.version?.hasPrefix(release == .v13 ? "13.0." : "0.12.") == true)
        for level in [ProsodyServer.LogLevel.info, .debug] {
            let server = try ProsodyServer(
                release: release, logLevel: level, componentJID: "apush.localhost", componentSecret: "launcher-secret")
            try await server.start()
            try await server.register(user: "alice", password: "pw", domain: server.domain)
            try await C2SClient.connect(port: server.c2sPort, domain: server.domain, user: "alice", password: "pw")
                .close()
            await server.stop()
            let log =
                (try? String(
                    contentsOf: server.baseDirectory.appendingPathComponent("prosody.log"), encoding: .utf8)) ?? ""
            #expect(log.contains("\tinfo\t"), "\(level)")
            #expect(log.contains("\tdebug\t") == (level == .debug), "\(level)")
        }
    }

    /// Behind the running server's back, on a domain its file store names with escapes: the account
    /// can no longer log in, another one still can.
    @Test(arguments: [ProsodyServer.Release.v0_12, .v13])
    func prosodyDeletesAnAccountFromItsStoreAlone(release: ProsodyServer.Release) async throws {
        let domain = "push-test.localhost"
        let server = try ProsodyServer(
            release: release, domain: domain, componentJID: "apush.localhost", componentSecret: "launcher-secret")
        try await server.start()
        do {
            for user in ["gone", "stays"] { try await server.register(user: user, password: "pw", domain: domain) }
            try await server.deleteFromStore(user: "gone", domain: domain)
            await #expect(throws: (any Error).self) {
                try await C2SClient.connect(port: server.c2sPort, domain: domain, user: "gone", password: "pw")
            }
            try await C2SClient.connect(port: server.c2sPort, domain: domain, user: "stays", password: "pw").close()
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test func prosodyNamesStoreFilesAsItsDataManagerDoes() {
        #expect(ProsodyServer.storeName("push-test.localhost") == "push%2dtest%2elocalhost")
        #expect(ProsodyServer.storeName("Zoë9") == "Zo%c3%ab9")
    }

    @Test func prosodyThatIsNotUnpackedNamesTheScriptThatUnpacksIt() throws {
        let error = #expect(throws: ServerProcessError.self) {
            try ProsodyServer.locate("prosody", release: .v13, in: "/nonexistent/prosody-13/usr/bin")
        }
        #expect(error?.code == .notInstalled)
        #expect(error?.message.contains("contrib/prosody/backports.sh") == true)
    }

    @Test(arguments: EjabberdServer.Release.allCases)
    func ejabberdServesPortsRegistersRestartsAndStops(release: EjabberdServer.Release) async throws {
        let server = try EjabberdServer(
            componentJID: "apush.localhost", componentSecret: "launcher-secret", release: release)
        try await server.start()
        await expectLifecycle(of: server) {
            do {
                try await server.register(user: "alice", password: "pw")
                return false
            } catch {
                return "\(error)".contains("already registered")
            }
        }
    }

    @Test func ejabberdThatCannotStartThrowsWithItsLog() async throws {
        // mod_carbons is not an ejabberd module: startup fails and the foreground node exits.
        let server = try EjabberdServer(
            componentJID: "apush.localhost", componentSecret: "launcher-secret", extraModulesConfig: "  mod_carbons: {}"
        )
        let error = await #expect(throws: ServerProcessError.self) { try await server.start() }
        #expect(error?.code == .exitedEarly)
        #expect(error?.message.contains("mod_carbons") == true)
        #expect(await server.pid == nil)
        #expect(!TCPProbe.accepts(port: server.c2sPort))
    }

    @Test func ejabberdWhoseBridgeDoesNotBuildThrowsWithTheCompilerOutputAndStartsNothing() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("build.sh")
        try "echo \"mod_apush_bridge.erl:12: syntax error before: '->'\" >&2\nexit 1\n"
            .write(to: script, atomically: true, encoding: .utf8)
        let server = try EjabberdServer(
            componentJID: "apush.localhost", componentSecret: "launcher-secret",
            bridge: EjabberdServer.Bridge(buildScript: script))
        let error = await #expect(throws: ServerProcessError.self) { try await server.start() }
        #expect(error?.code == .commandFailed)
        #expect(error?.message.contains("build.sh") == true)
        #expect(error?.message.contains("syntax error before: '->'") == true)
        #expect(await server.pid == nil)
        #expect(!TCPProbe.accepts(port: server.c2sPort))
    }

    @Test func prosodyWithABadConfigThrowsWithItsLog() async throws {
        let server = try ProsodyServer(
            componentJID: "apush.localhost", componentSecret: "launcher-secret", extraGlobalConfig: "this is not lua")
        let error = await #expect(throws: ServerProcessError.self) { try await server.start() }
        #expect(error?.code == .exitedEarly)
        #expect(await server.pid == nil)
    }

    @Test func postgreSQLRunsUnprivilegedKeepsItsDataAcrossARestartAndStops() async throws {
        var server: PostgreSQLServer? = try PostgreSQLServer()
        let directory = try #require(server).baseDirectory
        await expectLifecycle(of: try #require(server))
        server = nil
        #expect(!FileManager.default.fileExists(atPath: directory.path), "the cluster is removed")
    }

    @Test func postgreSQLRefusesAWrongPassword() async throws {
        let server = try PostgreSQLServer()
        try await server.start()
        let wrong = server.url.replacingOccurrences(of: "apush:", with: "apush:wrong-")
        let result = try await ExternalCommand.run(
            URL(fileURLWithPath: "/usr/lib/postgresql/15/bin/psql"), [wrong, "-X", "-c", "SELECT 1"],
            workingDirectory: FileManager.default.temporaryDirectory)
        await server.stop()
        #expect(result.status != 0)
        #expect(result.output.contains("password authentication failed"))
    }

    @Test func postgreSQLForTestsSkipsDurabilityAndADurableOneKeepsIt() async throws {
        for durable in [false, true] {
            let server = try PostgreSQLServer(durable: durable)
            try await server.start()
            let settings = try await psql(
                server, "SELECT current_setting('fsync') || ' ' || current_setting('synchronous_commit')")
            await server.stop()
            #expect(settings == (durable ? "on on" : "off off"), "durable: \(durable)")
        }
    }

    @Test func serverProcessStopEndsAProcessGroupWithSIGTERM() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ServerProcess(
            name: "shell",
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: ["-c", "sleep 30 & sleep 30"],
            workingDirectory: directory,
            outputURL: directory.appendingPathComponent("out"))
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        await process.stop(gracePeriod: .seconds(20))
        #expect(ContinuousClock.now - started < .seconds(15), "SIGTERM, not the SIGKILL fallback, ended it")
        #expect(await !process.isGroupAlive)
        #expect(await !process.isRunning)
    }

    @Test func serverProcessStopKillsAProcessThatIgnoresSIGTERM() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ServerProcess(
            name: "stubborn",
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: ["-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"],
            workingDirectory: directory,
            outputURL: directory.appendingPathComponent("out"))
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        await process.stop(gracePeriod: .milliseconds(300))
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        #expect(kill(process.pid, 0) != 0)
        #expect(await !process.isGroupAlive)
        #expect(try String(contentsOf: process.outputURL, encoding: .utf8) == "ready\n")
    }

    @Test func aMissingServerBinaryIsALoudErrorNamingThePackage() throws {
        let error = #expect(throws: ServerProcessError.self) {
            try ExternalCommand.locate("no-such-xmpp-server", installHint: "apt-get install no-such-xmpp-server")
        }
        #expect(error?.code == .notInstalled)
        #expect(error?.message == "no-such-xmpp-server is not installed: apt-get install no-such-xmpp-server")
    }

    @Test func testPortsAreDistinctAndFree() throws {
        let ports = try TestPorts.next(50)
        #expect(Set(ports).count == 50)
        #expect(ports.allSatisfy { !TCPProbe.accepts(port: $0) })
    }

    /// Runs `sql` through psql with the server's URL; returns its unaligned, tuples-only output.
    private func psql(_ server: PostgreSQLServer, _ sql: String) async throws -> String {
        let result = try await ExternalCommand.run(
            URL(fileURLWithPath: "/usr/lib/postgresql/15/bin/psql"),
            [server.url, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            workingDirectory: FileManager.default.temporaryDirectory)
        guard result.status == 0 else { throw ServerProcessError(.commandFailed, result.output) }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The real user id a process runs as, from /proc.
    private func processUserID(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }
        return line.flatMap { $0.split(whereSeparator: \.isWhitespace).dropFirst().first }.flatMap { Int($0) } ?? -1
    }

    private func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apush-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    private func expectLifecycle(of postgres: PostgreSQLServer) async {
        do {
            try await postgres.start()
            let firstPID = try #require(await postgres.pid)
            #expect(TCPProbe.accepts(port: postgres.port))
            if geteuid() == 0 {
                #expect(try processUserID(firstPID) != 0, "initdb and postgres refuse root")
            }
            #expect(
                try await psql(postgres, "CREATE TABLE kept (value text); INSERT INTO kept VALUES ('before')") == "")

            try await postgres.restart()
            let secondPID = try #require(await postgres.pid)
            #expect(secondPID != firstPID)
            #expect(kill(firstPID, 0) != 0)
            #expect(try await psql(postgres, "SELECT value FROM kept") == "before", "the data survives the restart")

            await postgres.stop()
            #expect(await postgres.pid == nil)
            #expect(kill(secondPID, 0) != 0)
            #expect(!TCPProbe.accepts(port: postgres.port))
        } catch {
            Issue.record("\(error)\n\(await postgres.logContents(lastLines: 40))")
            await postgres.stop()
        }
    }

    private func expectLifecycle(of server: any XMPPTestServer, accountExists: () async -> Bool) async {
        let ports = [server.c2sPort, server.componentPort]
        do {
            let firstPID = try #require(await server.pid)
            #expect(ports.allSatisfy { TCPProbe.accepts(port: $0) })
            try await server.register(user: "alice", password: "pw")

            try await server.restart()
            let secondPID = try #require(await server.pid)
            #expect(secondPID != firstPID)
            #expect(kill(firstPID, 0) != 0)
            #expect(ports.allSatisfy { TCPProbe.accepts(port: $0) })
            #expect(await accountExists(), "the account survives the restart")

            await server.stop()
            #expect(await server.pid == nil)
            #expect(kill(secondPID, 0) != 0)
            #expect(ports.allSatisfy { !TCPProbe.accepts(port: $0) })
        } catch {
            Issue.record("\(error)\n\(await server.logContents(lastLines: 40))")
            await server.stop()
        }
    }
}
