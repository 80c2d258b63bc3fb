import Foundation

/// Short-lived helper commands of the servers (`prosodyctl register`, `ejabberdctl status`).
enum ExternalCommand {
    struct Result {
        let status: Int32
        let output: String
    }

    /// The installed binary `name`, looked up in PATH, the sbin directories root's PATH usually has, and
    /// `also` (a package's own directory).
    static func locate(_ name: String, installHint: String, also: [String] = []) throws -> URL {
        let pathDirectories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let directories =
            pathDirectories + ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            + also
        for directory in directories where !directory.isEmpty {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        throw ServerProcessError(.notInstalled, "\(name) is not installed: \(installHint)")
    }

    /// Runs the command to completion (killing its process group after `timeout`, a liveness bound: a
    /// loaded sanitizer run once took more than 30 s for a `prosodyctl register`) and returns its output;
    /// a timeout's error carries what it had printed.
    static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String] = [:],
        workingDirectory: URL,
        timeout: Duration = .seconds(90)
    ) async throws -> Result {
        let outputURL = workingDirectory.appendingPathComponent("command-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let command = try ServerProcess(
            name: executable.lastPathComponent,
            executable: executable,
            arguments: arguments,
            environment: environment,
            workingDirectory: workingDirectory,
            outputURL: outputURL)
        let deadline = ContinuousClock.now + timeout
        while await command.isRunning {
            guard ContinuousClock.now < deadline else {
                await command.stop(gracePeriod: .seconds(1))
                let printed = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
                throw ServerProcessError(
                    .commandFailed,
                    "\(executable.lastPathComponent) \(arguments.first ?? "") timed out after \(timeout); "
                        + "it printed: \(printed.suffix(2000))")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let status = await command.terminationStatus ?? -1
        await command.stop()
        let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        return Result(status: status, output: output)
    }
}
