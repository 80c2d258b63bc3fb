import Foundation
import Synchronization

/// Free loopback TCP ports for servers under test. The kernel picks a free port; the process-wide
/// record makes sure two calls in one test run never hand out the same one.
public enum TestPorts {
    private static let handedOut = Mutex<Set<Int>>([])

    /// A port that was free on 127.0.0.1 a moment ago and was never returned before in this process.
    public static func next() throws -> Int {
        while true {
            let port = try kernelChosenPort()
            let isNew = handedOut.withLock { $0.insert(port).inserted }
            if isNew { return port }
        }
    }

    /// `count` distinct ports.
    public static func next(_ count: Int) throws -> [Int] {
        try (0..<count).map { _ in try next() }
    }

    private static func kernelChosenPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw portError("socket") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw portError("bind") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func portError(_ call: String) -> ServerProcessError {
        ServerProcessError(.launchFailed, "\(call) on 127.0.0.1:0 failed: \(String(cString: strerror(errno)))")
    }
}
