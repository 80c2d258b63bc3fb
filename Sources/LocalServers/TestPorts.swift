import Foundation
import Synchronization

/// Free loopback TCP ports for servers under test, picked at random below the kernel's ephemeral range:
/// a port the kernel chose was in that range, where an outgoing connection could take it between its
/// choice and the server's bind (ejabberd's distribution port once failed with `eaddrinuse`). Each is
/// checked free by binding it, and the process-wide record makes sure two calls in one test run never
/// hand out the same one.
public enum TestPorts {
    private static let handedOut = Mutex<Set<Int>>([])
    /// Below the ports the system reserves by convention, above which test servers may listen.
    private static let lowest = 10_000

    /// A port that was free on 127.0.0.1 a moment ago and was never returned before in this process.
    public static func next() throws -> Int {
        let range = lowest..<max(lowest + 1_000, ephemeralStart())
        for _ in 0..<10_000 {
            let port = Int.random(in: range)
            guard isFree(port) else { continue }
            if handedOut.withLock({ $0.insert(port).inserted }) { return port }
        }
        throw ServerProcessError(.launchFailed, "no free port on 127.0.0.1 in \(range)")
    }

    /// `count` distinct ports.
    public static func next(_ count: Int) throws -> [Int] {
        try (0..<count).map { _ in try next() }
    }

    /// The first port of the kernel's ephemeral range (32768 when it cannot be read).
    private static func ephemeralStart() -> Int {
        let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        return text?.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    }

    /// Whether a listener could bind 127.0.0.1:`port` now.
    private static func isFree(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
