import HTTPServer
import Synchronization
public import XMPP

/// What the host knows of itself that a module may report (on the operations endpoint, say): the
/// component link's state, how often it was made again, how long the host has run, and how often the
/// operations endpoint could not accept connections.
public final class HostStatus: Sendable {
    public let version: String
    private let started: ContinuousClock.Instant
    private let link = Mutex((up: false, connections: 0, standingBy: false))
    private let operationsEndpoint = Mutex<HTTPServer?>(nil)

    public init(version: String = ComponentService.softwareVersion, started: ContinuousClock.Instant = .now) {
        self.version = version
        self.started = started
    }

    /// Whether the link to the server is up (handshake done, not lost since).
    public var linkIsUp: Bool { link.withLock { $0.up } }

    /// What this instance is to the server: active while the link is up, standing by while another
    /// instance holds the component JID, connecting otherwise.
    public var linkRole: LinkRole {
        link.withLock { link in link.up ? .active : link.standingBy ? .standby : .connecting }
    }

    /// How often the link was made again after the first time.
    public var linkReconnects: Int { link.withLock { max(0, $0.connections - 1) } }

    public var uptimeSeconds: Int { Int((ContinuousClock.now - started).components.seconds) }

    /// How many times the operations endpoint's accepting started to fail (`HTTPServer.acceptFailures`).
    public var httpAcceptFailures: Int { operationsEndpoint.withLock { $0?.acceptFailures ?? 0 } }

    /// The operations endpoint whose figures this reports.
    func serve(_ endpoint: HTTPServer) {
        operationsEndpoint.withLock { $0 = endpoint }
    }

    /// Follows the link's events.
    public func record(_ event: ConnectionEvent) {
        link.withLock { link in
            switch event {
            case .connected:
                link.up = true
                link.standingBy = false
                link.connections += 1
            case .disconnected(let failure):
                link.up = false
                link.standingBy = failure.isConflict
            }
        }
    }

    /// The link is stopped for good (the host is shutting down).
    func linkStopped() {
        link.withLock { link in
            link.up = false
            link.standingBy = false
        }
    }
}

/// Whether this instance holds the component link (several instances may share one store).
public enum LinkRole: String, Sendable, Equatable {
    case active
    /// Another instance holds the component JID; this one takes over when it goes.
    case standby
    /// Neither: the link is down for another reason (the server away, a refused secret).
    case connecting
}
