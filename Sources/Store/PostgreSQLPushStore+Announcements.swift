public import PostgreSQL
import SQLite

/// What the instances sharing a PostgreSQL store tell each other, through it: the due times its
/// triggers announce (`apush_due`: a window's end, a retry's time, a lease's) and the messages an
/// instance passes to the others (`apush_peers`). Each is heard on a `Listener` of its own.
extension PostgreSQLPushStore {
    static let dueChannel = "apush_due"
    static let peerChannel = "apush_peers"

    /// After any (re)connection `announce` hears `Timestamp.min`: announcements made meanwhile were
    /// lost, and anything may be due.
    public func watchDueWork(_ announce: @escaping @Sendable (Timestamp) -> Void) throws -> (any StoreWatch)? {
        try Listener(
            conninfo: conninfo, channel: Self.dueChannel, reconnectInterval: reconnectInterval,
            connected: { announce(.min) },
            heard: { payloads in
                if let earliest = Self.earliestDue(payloads) { announce(earliest) }
            })
    }

    /// The earliest due time announced; a damaged payload is ignored.
    static func earliestDue(_ payloads: [String]) -> Timestamp? {
        payloads.lazy.compactMap { Timestamp($0) }.min()
    }

    public func tellPeers(_ message: String) async throws {
        guard message.utf8.count <= peerMessageLimit else {
            throw StoreCapacityError(collection: "message to the other instances (bytes)", limit: peerMessageLimit)
        }
        try await run { connection in
            try connection.execute("SELECT pg_notify($1, $2)", [.text(Self.peerChannel), .text(message)])
        }
    }

    public func watchPeers(_ hear: @escaping @Sendable (String) -> Void) throws -> (any StoreWatch)? {
        try Listener(
            conninfo: conninfo, channel: Self.peerChannel, reconnectInterval: reconnectInterval, connected: {},
            heard: { $0.forEach(hear) })
    }
}

extension Listener: StoreWatch {}
