public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private PostgreSQL 15 on loopback for tests: its own cluster (`initdb`) in a temporary directory,
/// its own port and socket directory, one database, run in the foreground and stopped by its PID.
///
/// `initdb` and `postgres` refuse to run as root; run as root (CI), both run as the unprivileged
/// `apush-test` user (created by contrib/setup-debian.sh), which is given the directory.
/// TCP connections need the password, which only `url` carries.
public actor PostgreSQLServer {
    static let installHint = "apt-get install postgresql-15 (contrib/setup-debian.sh)"
    static let binaryDirectory = "/usr/lib/postgresql/15/bin"
    /// The user the server runs as when the tests run as root.
    public static let unprivilegedUser = "apush-test"

    public nonisolated let port: Int
    public nonisolated let user: String
    public nonisolated let database: String
    private nonisolated let password: String
    /// Holds `data/` (the cluster), the socket, the password file and the server's output.
    public nonisolated let baseDirectory: URL
    private nonisolated let dataDirectory: URL
    /// Whether commits reach the disk as in production (fsync on); off for tests.
    public nonisolated let isDurable: Bool
    private var process: ServerProcess?
    private var isInitialized = false

    /// Picks a port and creates the directory; nothing runs until `start()`. `durable`: PostgreSQL's
    /// own defaults for fsync and commits, for a benchmark; tests need no durability across a power cut.
    public init(user: String = "apush", database: String = "apush", durable: Bool = false) throws {
        self.user = user
        self.database = database
        isDurable = durable
        password = UUID().uuidString
        port = try TestPorts.next()
        baseDirectory = try ServerDirectory.create(prefix: "postgres")
        dataDirectory = baseDirectory.appendingPathComponent("data")
    }

    deinit {
        try? FileManager.default.removeItem(at: baseDirectory)
    }

    /// `postgresql://user:password@127.0.0.1:port/database`, for the client under test.
    public nonisolated var url: String {
        "postgresql://\(user):\(password)@127.0.0.1:\(port)/\(database)"
    }

    /// The PID of the running postmaster, nil when stopped.
    public var pid: Int32? { process?.pid }

    /// Creates the cluster and the database the first time, starts the server and returns once it
    /// accepts connections.
    public func start() async throws {
        guard process == nil else { return }
        if !isInitialized {
            try await initializeCluster()
        }
        let postgres = try Self.binary("postgres")
        let server = try ServerProcess(
            name: "postgres",
            executable: try Self.launcher(for: postgres),
            arguments: Self.launcherArguments(for: postgres) + [
                "-D", dataDirectory.path, "-h", "127.0.0.1", "-p", "\(port)", "-k", baseDirectory.path,
                // Suites run side by side, each store with its pool and listeners: more than the default 100.
                "-c", "max_connections=400",
            ]
                + (isDurable
                    ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
            workingDirectory: baseDirectory,
            outputURL: baseDirectory.appendingPathComponent("postgres.log"))
        do {
            try await server.waitForPort(port: port, timeout: .seconds(30))
            try await waitUntilReady(server)
            if !isInitialized {
                try await createDatabase()
                isInitialized = true
            }
        } catch let error as ServerProcessError {
            await server.stop(signal: SIGINT)
            throw ServerProcessError(error.code, error.message + "\n" + logContents(lastLines: 30))
        }
        process = server
    }

    /// Fast shutdown (SIGINT: open sessions are ended), SIGKILL after 10 s; waits until every process
    /// of the server is gone. The cluster and the port are kept.
    public func stop() async {
        await process?.stop(signal: SIGINT)
        process = nil
    }

    /// Stops and starts again on the same directory and port, as a database restart or failover would.
    public func restart() async throws {
        await stop()
        try await start()
    }

    /// The server's output (cut to its last `lastLines` lines), for failure diagnostics.
    public func logContents(lastLines: Int?) -> String {
        ServerDirectory.contents(of: ["initdb.log", "postgres.log"], in: baseDirectory, lastLines: lastLines)
    }

    private func initializeCluster() async throws {
        let passwordFile = baseDirectory.appendingPathComponent("password")
        try password.write(to: passwordFile, atomically: true, encoding: .utf8)
        try Self.giveToUnprivilegedUser(baseDirectory, passwordFile)
        let initdb = try Self.binary("initdb")
        let result = try await ExternalCommand.run(
            try Self.launcher(for: initdb),
            Self.launcherArguments(for: initdb) + [
                "-D", dataDirectory.path, "-U", user, "--pwfile", passwordFile.path, "-E", "UTF8", "--no-locale",
                "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
            ],
            workingDirectory: baseDirectory, timeout: .seconds(120))
        try? result.output.write(
            to: baseDirectory.appendingPathComponent("initdb.log"), atomically: true, encoding: .utf8)
        try? FileManager.default.removeItem(at: passwordFile)
        guard result.status == 0 else {
            throw ServerProcessError(.commandFailed, "initdb exited \(result.status): \(result.output)")
        }
    }

    /// `pg_isready` until the server accepts sessions: the port opens before recovery is done.
    private func waitUntilReady(_ server: ServerProcess) async throws {
        let isReady = try Self.binary("pg_isready")
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let result = try await ExternalCommand.run(
                isReady, ["-h", "127.0.0.1", "-p", "\(port)", "-U", user, "-d", "postgres", "-q"],
                workingDirectory: baseDirectory)
            if result.status == 0 { return }
            guard await server.isRunning else {
                throw ServerProcessError(.exitedEarly, "postgres (pid \(server.pid)) exited before accepting sessions")
            }
            guard ContinuousClock.now < deadline else {
                throw ServerProcessError(.portTimeout, "postgres (pid \(server.pid)) did not accept sessions in 30 s")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Over the socket directory, where the cluster trusts local sessions.
    private func createDatabase() async throws {
        let createdb = try Self.binary("createdb")
        let result = try await ExternalCommand.run(
            createdb, ["-h", baseDirectory.path, "-p", "\(port)", "-U", user, database],
            workingDirectory: baseDirectory)
        guard result.status == 0 else {
            throw ServerProcessError(.commandFailed, "createdb exited \(result.status): \(result.output)")
        }
    }

    private static func binary(_ name: String) throws -> URL {
        let url = URL(fileURLWithPath: binaryDirectory).appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw ServerProcessError(.notInstalled, "\(url.path) is missing: \(installHint)")
        }
        return url
    }

    private static var runsAsRoot: Bool { geteuid() == 0 }

    /// `setpriv`, which execs the server as the unprivileged user (its PID stays the server's), when
    /// running as root; the binary itself otherwise.
    private static func launcher(for binary: URL) throws -> URL {
        guard runsAsRoot else { return binary }
        return try ExternalCommand.locate("setpriv", installHint: "apt-get install util-linux")
    }

    private static func launcherArguments(for binary: URL) -> [String] {
        guard runsAsRoot else { return [] }
        return [
            "--reuid=\(unprivilegedUser)", "--regid=\(unprivilegedUser)", "--clear-groups", "--", binary.path,
        ]
    }

    /// Hands the files to the unprivileged user when running as root.
    private static func giveToUnprivilegedUser(_ urls: URL...) throws {
        guard runsAsRoot else { return }
        guard let entry = getpwnam(unprivilegedUser) else {
            throw ServerProcessError(
                .notInstalled, "no user \(unprivilegedUser) to run PostgreSQL as root: run contrib/setup-debian.sh")
        }
        for url in urls where chown(url.path, entry.pointee.pw_uid, entry.pointee.pw_gid) != 0 {
            throw ServerProcessError(
                .launchFailed, "chown \(url.path) to \(unprivilegedUser): \(String(cString: strerror(errno)))")
        }
    }
}

extension PostgreSQLServer {
    private static let sharedServer = Task { () throws -> PostgreSQLServer in
        let server = try PostgreSQLServer()
        try await server.start()
        if let pid = await server.pid {
            StopAtExit.register(pid: pid, directory: server.baseDirectory.path)
        }
        return server
    }

    /// One server for the whole test process, started on first use and stopped when the process
    /// exits (a static is never deinitialized: without that, every test run would leave one behind).
    /// Tests share it through databases or schemas of their own; one that stops or restarts a server
    /// starts its own.
    public static var shared: PostgreSQLServer {
        get async throws { try await sharedServer.value }
    }
}

/// Servers to stop when the process exits: fast shutdown, SIGKILL after 5 s, then their directory.
private enum StopAtExit {
    private static let servers = Mutex<[(pid: Int32, directory: String)]>([])
    private static let handlerInstalled = Mutex(false)

    static func register(pid: Int32, directory: String) {
        servers.withLock { $0.append((pid, directory)) }
        let install = handlerInstalled.withLock { installed in
            defer { installed = true }
            return !installed
        }
        if install {
            atexit { StopAtExit.stopAll() }
        }
    }

    private static func stopAll() {
        for server in servers.withLock({ $0 }) where ProcessGroup.hasLiveMember(server.pid) {
            kill(-server.pid, SIGINT)
            let deadline = ContinuousClock.now + .seconds(5)
            while ProcessGroup.hasLiveMember(server.pid) && ContinuousClock.now < deadline {
                usleep(20_000)
            }
            if ProcessGroup.hasLiveMember(server.pid) {
                kill(-server.pid, SIGKILL)
            }
            try? FileManager.default.removeItem(atPath: server.directory)
        }
    }
}
