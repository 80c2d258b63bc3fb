/// What tests and the demo need of a real server they start: Prosody and ejabberd alike.
public protocol XMPPTestServer: Actor {
    nonisolated var domain: String { get }
    nonisolated var c2sPort: Int { get }
    /// Where the component under test connects.
    nonisolated var componentPort: Int { get }
    /// Where another component (a stand-in App Server) connects.
    nonisolated func componentPort(for jid: String) -> Int
    /// The running server's PID, nil when stopped.
    var pid: Int32? { get }
    func start() async throws
    /// Stops by PID: SIGTERM, then SIGKILL after a grace period.
    func stop() async
    /// Stops and starts again with the same ports and data.
    func restart() async throws
    func register(user: String, password: String) async throws
    /// The server's logs, for a failing test's message.
    func logContents(lastLines: Int?) -> String
}

extension ProsodyServer: XMPPTestServer {
    /// Prosody takes every component on one port.
    public nonisolated func componentPort(for jid: String) -> Int { componentPort }

    public func register(user: String, password: String) async throws {
        try await register(user: user, password: password, domain: domain)
    }
}

extension EjabberdServer: XMPPTestServer {
    /// ejabberd gives each of `otherComponents` a listener of its own.
    public nonisolated func componentPort(for jid: String) -> Int { otherComponentPorts[jid] ?? componentPort }
}
