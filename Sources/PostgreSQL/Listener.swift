import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Listens on one channel (`LISTEN`) on a connection and a thread of its own, which sleeps in `poll`
/// between notifications: a quiet channel costs no CPU.
///
/// While the server is away it connects again every `reconnectInterval`. After every (re)connection
/// it calls `connected`: what was notified while it was not listening is lost, and its owner may look
/// for it another way. Runs until `stop`.
///
/// It hands on at most one batch of notifications per `spacing`: what comes meanwhile waits in the
/// connection and is handed on with the next batch, so a flood on the channel (anyone who may connect
/// to the database may notify) costs its owner a bounded number of calls, however fast it comes.
public final class Listener: Sendable {
    private let conninfo: String
    private let channel: String
    private let reconnectInterval: Duration
    private let spacing: Duration
    private let connected: @Sendable () -> Void
    private let heard: @Sendable ([String]) -> Void
    /// Written to by `stop`: the thread polls it beside the connection (and in its pauses).
    private let stopPipe: (read: Int32, write: Int32)
    private let isStopped = Mutex(false)

    /// Starts listening; `heard` gets the payloads of each batch of notifications on `channel`.
    public init(
        conninfo: String, channel: String, reconnectInterval: Duration, spacing: Duration = .zero,
        connected: @escaping @Sendable () -> Void, heard: @escaping @Sendable ([String]) -> Void
    ) throws {
        var descriptors: [Int32] = [-1, -1]
        guard pipe(&descriptors) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        stopPipe = (descriptors[0], descriptors[1])
        self.conninfo = conninfo
        self.channel = channel
        self.reconnectInterval = reconnectInterval
        self.spacing = spacing
        self.connected = connected
        self.heard = heard
        let thread = Thread { [self] in listen() }
        thread.name = "apush-listen-\(channel)"
        thread.start()
    }

    deinit {
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Ends the thread (at once, even while it waits); stopping twice is stopping once.
    public func stop() {
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
                try connection.execute("LISTEN \(channel)")
                connected()
                while let notifications = try connection.notifications(unlessReadable: stopPipe.read) {
                    let payloads = notifications.filter { $0.channel == channel }.map(\.payload)
                    guard !payloads.isEmpty else { continue }
                    heard(payloads)
                    guard spacing == .zero || pause(spacing) else { return }
                }
                return
            } catch {
                guard pause(reconnectInterval) else { return }
            }
        }
    }

    /// Waits `interval`; false if stopped meanwhile.
    private func pause(_ interval: Duration) -> Bool {
        var descriptor = pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(clamping: interval.wholeMilliseconds))
        return descriptor.revents == 0
    }
}
