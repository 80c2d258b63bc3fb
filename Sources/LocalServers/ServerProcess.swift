public import Foundation

/// A failure to find, start, reach or command a server under test. The message carries the log tail.
public struct ServerProcessError: Error, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        public static let notInstalled = Code(name: "notInstalled")
        public static let exitedEarly = Code(name: "exitedEarly")
        public static let portTimeout = Code(name: "portTimeout")
        public static let commandFailed = Code(name: "commandFailed")
        public static let launchFailed = Code(name: "launchFailed")
        public static let notRunning = Code(name: "notRunning")
        public var description: String { name }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// One running server binary. It is spawned in a process group of its own (Foundation's `Process` does
/// that on Linux), so a launcher script and the real server below it are signalled together, by PID only.
public actor ServerProcess {
    public nonisolated let name: String
    public nonisolated let pid: Int32
    /// The file that receives the process's standard output and standard error.
    public nonisolated let outputURL: URL
    private let process: Process
    private var isStopped = false

    /// Starts `executable` with `arguments` in `workingDirectory`; `environment` is added to the current one.
    public init(
        name: String,
        executable: URL,
        arguments: [String],
        environment: [String: String] = [:],
        workingDirectory: URL,
        outputURL: URL
    ) throws {
        // Appends, so the output of every run of a restarted server stays in one file.
        if !FileManager.default.fileExists(atPath: outputURL.path) {
            guard FileManager.default.createFile(atPath: outputURL.path, contents: nil) else {
                throw ServerProcessError(.launchFailed, "cannot create \(outputURL.path)")
            }
        }
        let output = try FileHandle(forWritingTo: outputURL)
        try output.seekToEnd()
        defer { try? output.close() }

        let process = Process()
        // The child inherits the spawning thread's signal mask, and the concurrency pool's threads block
        // SIGTERM: the server would ignore `stop()` until SIGKILL. coreutils `env --default-signal`
        // unblocks every signal and restores default handling, then execs (the PID stays the server's).
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal", executable.path] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.currentDirectoryURL = workingDirectory
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()

        self.name = name
        self.process = process
        self.pid = process.processIdentifier
        self.outputURL = outputURL
    }

    deinit {
        // A test that forgot `stop()` or threw before it must not leave a server behind.
        if !isStopped && (process.isRunning || ProcessGroup.hasLiveMember(pid)) {
            kill(-pid, SIGKILL)
        }
    }

    public var isRunning: Bool { process.isRunning }

    /// The exit status of the spawned process, or nil while it runs.
    public var terminationStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    /// Whether any process of the server's group is still alive (the launcher or what it started).
    public var isGroupAlive: Bool {
        if process.isRunning { return true }
        if isStopped { return false }
        return ProcessGroup.hasLiveMember(pid)
    }

    /// Waits until `host:port` accepts a TCP connection; throws if the process exits first or time runs out.
    public func waitForPort(host: String = "127.0.0.1", port: Int, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while !TCPProbe.accepts(host: host, port: port) {
            guard process.isRunning else {
                throw ServerProcessError(
                    .exitedEarly,
                    "\(name) (pid \(pid)) exited with status \(process.terminationStatus) before port \(port) opened")
            }
            guard ContinuousClock.now < deadline else {
                throw ServerProcessError(
                    .portTimeout, "\(name) (pid \(pid)) did not open port \(port) within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Sends `signal` (SIGTERM unless the server wants another, e.g. PostgreSQL's fast shutdown on
    /// SIGINT) to the group, then SIGKILL after `gracePeriod`; returns once every process of the group
    /// is gone.
    public func stop(signal: Int32 = SIGTERM, gracePeriod: Duration = .seconds(10)) async {
        guard !isStopped else { return }
        signalGroup(signal)
        let deadline = ContinuousClock.now + gracePeriod
        var killed = false
        while isGroupAlive {
            if !killed && ContinuousClock.now >= deadline {
                signalGroup(SIGKILL)
                killed = true
            }
            // Each look may read every process's stat: not too often.
            try? await Task.sleep(for: .milliseconds(50))
        }
        isStopped = true
    }

    /// Only while a member lives: once the group is gone its number may belong to someone else.
    private func signalGroup(_ signal: Int32) {
        if isGroupAlive {
            kill(-pid, signal)
        }
    }
}

enum ProcessGroup {
    /// Whether a process other than a zombie is in group `groupID`. Orphans of a stopped launcher are
    /// reparented to init, which may take a second or more to reap them, so `kill(-group, 0)` would
    /// report zombies as alive.
    static func hasLiveMember(_ groupID: Int32) -> Bool {
        // No member at all, not even a zombie: no need to read every process's stat.
        guard kill(-groupID, 0) == 0 || errno != ESRCH else { return false }
        #if os(Linux)
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return false }
            return entries.contains { entry in
                guard Int32(entry) != nil,
                    let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                    let commandEnd = stat.lastIndex(of: ")")
                else { return false }
                // After "pid (comm)": state, ppid, pgrp.
                let fields = stat[stat.index(after: commandEnd)...].split(separator: " ")
                return fields.count > 2 && fields[0] != "Z" && fields[0] != "X" && Int32(fields[2]) == groupID
            }
        #else
            return true
        #endif
    }
}

/// Connect-polling of loopback ports.
public enum TCPProbe {
    /// Whether a TCP connection to `host:port` (an IPv4 address) succeeds right now.
    public static func accepts(host: String = "127.0.0.1", port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return false }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}
