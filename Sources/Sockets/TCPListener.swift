import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A listening TCP socket: one thread blocks in accept(2) (an idle listener uses no CPU) and hands
/// each connection to `onAccept`. Serves the operations endpoint, and the stand-in servers of tests.
///
/// An accept that fails for want of a resource (no descriptor left, no buffer or memory) does not stop
/// the listener: it tries again after a pause that doubles up to a second (`AcceptBackoff`), and tells
/// `onAcceptState` once when accepting starts failing and once when it works again.
public final class TCPListener: Sendable {
    public let port: UInt16
    private let descriptor: Int32
    /// Shared with the accepting thread, which must not keep the listener alive (its deinit closes it).
    private let closed = ClosedFlag()

    private final class ClosedFlag: Sendable {
        private let closed = Mutex(false)

        var isSet: Bool { closed.withLock { $0 } }

        /// Sets it; whether it was set already.
        func set() -> Bool {
            closed.withLock { closed in
                defer { closed = true }
                return closed
            }
        }
    }

    /// Listens on `host:port` (port 0: one the kernel picks, read back from `port`) and starts
    /// accepting at once. `host` is a name or a numeric address; the first address that binds is used.
    /// With `sendTimeoutSeconds`, a send to an accepted peer that stopped reading fails after that long
    /// (a stand-in server that must push back on its peer as a real one does leaves it nil).
    public init(
        host: String = "127.0.0.1", port: UInt16 = 0, backlog: Int32 = 16, sendTimeoutSeconds: Int? = nil,
        onAcceptState: @escaping @Sendable (AcceptState) -> Void = { _ in },
        onAccept: @escaping @Sendable (TCPConnection) -> Void
    ) throws {
        let (fd, boundPort) = try Self.bind(host: host, port: port, backlog: backlog)
        descriptor = fd
        self.port = boundPort
        let closed = closed
        let thread = Thread {
            var backoff = AcceptBackoff()
            while true {
                let client = accept(fd, nil, nil)
                if client >= 0 {
                    if backoff.succeeded() { onAcceptState(.accepting) }
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                    Self.prepare(client, sendTimeoutSeconds: sendTimeoutSeconds)
                    onAccept(TCPConnection(descriptor: client))
                    continue
                }
                let code = errno
                // EINVAL once close() shut the socket down.
                if closed.isSet { break }
                if code == EINTR || code == ECONNABORTED { continue }
                let (pause, first) = backoff.failed()
                if first { onAcceptState(.failing(SystemError(call: "accept", errno: code))) }
                usleep(pause)
            }
            Glibc.close(fd)
        }
        thread.start()
    }

    /// Whether the listener can accept connections.
    public enum AcceptState: Sendable, Equatable {
        case accepting
        /// accept(2) fails (it is tried again, with pauses, until it works).
        case failing(SystemError)
    }

    private static func bind(host: String, port: UInt16, backlog: Int32) throws -> (Int32, UInt16) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw SystemError(call: "getaddrinfo(\(host))", errno: EADDRNOTAVAIL)
        }
        defer { freeaddrinfo(list) }
        var lastError = SystemError(call: "bind", errno: EADDRNOTAVAIL)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                lastError = SystemError(call: "socket", errno: errno)
                continue
            }
            var reuse: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
            var bound = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let failedCall: String? = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    if Glibc.bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 { return "bind" }
                    if getsockname(fd, pointer, &length) != 0 { return "getsockname" }
                    if listen(fd, backlog) != 0 { return "listen" }
                    return nil
                }
            }
            if let failedCall {
                lastError = SystemError(call: "\(failedCall)(\(host):\(port))", errno: errno)
                Glibc.close(fd)
                continue
            }
            return (fd, Self.port(of: bound))
        }
        throw lastError
    }

    private static func port(of address: sockaddr_storage) -> UInt16 {
        var address = address
        let family = Int32(address.ss_family)
        return withUnsafePointer(to: &address) { pointer in
            if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        }
    }

    /// No delay for small answers, and the bound on a send, if any.
    private static func prepare(_ client: Int32, sendTimeoutSeconds: Int?) {
        var noDelay: Int32 = 1
        _ = setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        if let sendTimeoutSeconds {
            var timeout = timeval(tv_sec: sendTimeoutSeconds, tv_usec: 0)
            _ = setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    /// Stops accepting; connections already accepted stay open. shutdown(2) wakes the blocked accept(2),
    /// and the accepting thread closes the descriptor on its way out.
    public func close() {
        if !closed.set() { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    deinit {
        close()
    }
}
