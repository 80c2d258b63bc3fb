import LocalServers
import BlockingWork
import Foundation
import Store
import Testing

@testable import APush

/// Issue 21: the commands as an independently written client library sees them. Clients/commands_slixmpp.py
/// runs every command through slixmpp's xep_0050 API and Form.reply(), as a user and as an operator,
/// against a real Prosody and the component, and checks what comes back (see the script for the list).
/// slixmpp comes from PyPI (contrib/setup-debian.sh installs it).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CommandsSlixmppEndToEndTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Clients/commands_slixmpp.py")

    @Test(arguments: PushTestbed.bridgedServers)
    func everyCommandWorksFromSlixmpp(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            try await bed.enableDevice(token: "token-slixmpp-phone", resource: "phone")
            try await bed.enableDevice(token: "token-slixmpp-tablet", resource: "tablet")
            let run = try await Self.runScript([
                "--port", String(bed.server.c2sPort), "--domain", PushTestbed.domain,
                "--component", PushTestbed.componentJID, "--user", "alice@localhost", "--user-password", "pw-alice",
                "--operator", "carol@localhost", "--operator-password", "pw-carol",
            ])
            #expect(run.status == 0, "commands_slixmpp.py exited \(run.status):\n\(run.output)")
            #expect(run.output.contains("slixmpp checks: "), "the script did not finish:\n\(run.output)")
            // The script removed one registration as the user and the other as the operator.
            let store = try #require(bed.module).service.store
            #expect(try await store.countRegistrations(matching: RegistrationFilter()) == 0)
        }
    }

    /// Runs the script with python3 from PATH to its end, on a thread of its own (it blocks); it bounds
    /// each answer's wait itself.
    private static func runScript(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await BlockingWork.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script.path] + arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
