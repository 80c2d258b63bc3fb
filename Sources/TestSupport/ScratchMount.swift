public import Foundation
import Sockets
import XMPP

#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs of the test's own, mounted in a temporary directory, so the store can be made full
/// or read-only from outside the process. Needs root (or CAP_SYS_ADMIN); always unmounted after.
public final class ScratchMount: Sendable {
    public let directory: URL
    private var filler: String { directory.appendingPathComponent("filler").path }

    public static let isAvailable: Bool = {
        guard let probe = try? ScratchMount(megabytes: 1) else { return false }
        probe.remove()
        return true
    }()

    public init(megabytes: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-mount-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        guard Glibc.mount("tmpfs", directory.path, "tmpfs", 0, "size=\(megabytes)m,mode=0755") == 0 else {
            let code = errno
            try? FileManager.default.removeItem(at: directory)
            throw SystemError(call: "mount tmpfs", errno: code)
        }
    }

    /// Writes a file until the file system has no room left.
    public func fill() throws {
        let descriptor = open(filler, O_CREAT | O_WRONLY | O_APPEND, 0o600)
        guard descriptor >= 0 else { throw SystemError(call: "open filler", errno: errno) }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 4096)
        while chunk.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    public func emptyFiller() {
        unlink(filler)
    }

    public func setReadOnly(_ readOnly: Bool) throws {
        let flags = UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0)
        guard Glibc.mount("tmpfs", directory.path, "tmpfs", flags, nil) == 0 else {
            throw SystemError(call: "remount \(readOnly ? "ro" : "rw")", errno: errno)
        }
    }

    /// Unmounts (lazily, should a file still be open) and removes the directory.
    public func remove() {
        umount2(directory.path, Int32(MNT_DETACH))
        try? FileManager.default.removeItem(at: directory)
    }
}
