#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call, with the call's name and errno, so a log line says what failed and why.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Runs a system call, retrying on EINTR; a negative result throws the errno with the call's name.
@discardableResult
func syscall<T: FixedWidthInteger>(_ call: String, _ body: () -> T) throws -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        throw SystemError(call: call, errno: code)
    }
}
