import Foundation
import PostgreSQL
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The due times a PostgreSQL store announces (`apush_due`, by the triggers that store a window's end,
/// a retry's time or a lease's), heard on a connection of their own on a thread of their own, which
/// sleeps in `poll` between them: an idle instance uses no CPU.
///
/// While the server is away it connects again every `reconnectInterval`; after any (re)connection it
/// hears `Timestamp.min`, since announcements made meanwhile were lost and anything may be due.
final class DueWorkAnnouncements: DueWorkWatch {
    static let channel = "apush_due"

    private let conninfo: String
    private let reconnectInterval: Duration
    private let announce: @Sendable (Timestamp) -> Void
    /// Written to by `stop`: the thread polls it beside the connection (and in its pauses).
    private let stopPipe: (read: Int32, write: Int32)
    private let isStopped = Mutex(false)

    init(conninfo: String, reconnectInterval: Duration, announce: @escaping @Sendable (Timestamp) -> Void) throws {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { throw POSIXError(.EMFILE) }
        stopPipe = (descriptors[0], descriptors[1])
        self.conninfo = conninfo
        self.reconnectInterval = reconnectInterval
        self.announce = announce
        let thread = Thread { [self] in listen() }
        thread.name = "apush-due-work"
        thread.start()
    }

    deinit {
        close(stopPipe.read)
        close(stopPipe.write)
    }

    func stop() {
        let wasStopped = isStopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        var byte: UInt8 = 0
        _ = write(stopPipe.write, &byte, 1)
    }

    private func listen() {
        while true {
            do {
                let connection = try Connection(conninfo)
                try connection.execute("LISTEN \(Self.channel)")
                announce(.min)
                while let notifications = try connection.notifications(unlessReadable: stopPipe.read) {
                    if let earliest = Self.earliest(notifications) { announce(earliest) }
                }
                return
            } catch {
                guard pause() else { return }
            }
        }
    }

    /// The earliest due time among announcements; others (another channel, a damaged payload) are
    /// ignored.
    static func earliest(_ notifications: [ChannelNotification]) -> Timestamp? {
        notifications.lazy.filter { $0.channel == channel }.compactMap { Timestamp($0.payload) }.min()
    }

    /// Waits `reconnectInterval`; false if stopped meanwhile.
    private func pause() -> Bool {
        var descriptor = pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(clamping: reconnectInterval.wholeMilliseconds))
        return descriptor.revents == 0
    }
}
