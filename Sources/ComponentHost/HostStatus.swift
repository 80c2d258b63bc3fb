import Synchronization
public import XMPP

/// What the host knows of itself that a module may report (on the operations endpoint, say): the
/// component link's state, how often it was made again, and how long the host has run.
public final class HostStatus: Sendable {
    public let version: String
    private let started: ContinuousClock.Instant
    private let link = Mutex((up: false, connections: 0))

    public init(version: String = ComponentService.softwareVersion, started: ContinuousClock.Instant = .now) {
        self.version = version
        self.started = started
    }

    /// Whether the link to the server is up (handshake done, not lost since).
    public var linkIsUp: Bool { link.withLock { $0.up } }

    /// How often the link was made again after the first time.
    public var linkReconnects: Int { link.withLock { max(0, $0.connections - 1) } }

    public var uptimeSeconds: Int { Int((ContinuousClock.now - started).components.seconds) }

    /// Follows the link's events.
    public func record(_ event: ConnectionEvent) {
        link.withLock { link in
            switch event {
            case .connected:
                link.up = true
                link.connections += 1
            case .disconnected:
                link.up = false
            }
        }
    }

    /// The link is stopped for good (the host is shutting down).
    func linkStopped() { link.withLock { $0.up = false } }
}
