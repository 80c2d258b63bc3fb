import Foundation
import Synchronization
public import XMPP

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback TCP listener on a kernel-chosen port: one thread blocks in accept(2) and hands each
/// connection to `onAccept`. For stand-in servers in tests and the demo, not for production.
public final class TCPListener: Sendable {
    public let port: UInt16
    private let descriptor: Int32
    private let closed = Mutex(false)

    /// Listens on 127.0.0.1:0 and starts accepting at once.
    public init(onAccept: @escaping @Sendable (TCPConnection) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError(call: "socket", errno: errno) }
        var reuse: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let failedCall: String? = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                if bind(fd, pointer, length) != 0 { return "bind" }
                if getsockname(fd, pointer, &length) != 0 { return "getsockname" }
                if listen(fd, 16) != 0 { return "listen" }
                return nil
            }
        }
        if let failedCall {
            let code = errno
            Glibc.close(fd)
            throw SystemError(call: failedCall, errno: code)
        }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client >= 0 {
                    _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                    var noDelay: Int32 = 1
                    _ = setsockopt(
                        client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
                    onAccept(TCPConnection(descriptor: client))
                } else if errno != EINTR && errno != ECONNABORTED {
                    break  // EINVAL once close() shut the socket down
                }
            }
            Glibc.close(fd)
        }
        thread.start()
    }

    /// Stops accepting; connections already accepted stay open. shutdown(2) wakes the blocked accept(2),
    /// and the accepting thread closes the descriptor on its way out.
    public func close() {
        let wasClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        if !wasClosed { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    deinit {
        close()
    }
}
