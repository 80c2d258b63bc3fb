public import SQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The store's location can never work as configured: its directory does not exist or is not a
/// directory, the path names a directory or something else than a file, or the file is not a database
/// of this build. Thrown at start only, so the host stops and names its `store` setting.
public struct UnusableStoreError: Error, CustomStringConvertible, Equatable {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

/// The store cannot be opened for now: the file system refuses (read-only, full, a permission, an I/O
/// error). The call failed before it touched anything; a later one opens the store once it can.
public struct StoreUnavailableError: Error, CustomStringConvertible {
    public var cause: any Error

    public init(cause: any Error) {
        self.cause = cause
    }

    /// Names the kind of fault as SQLite does ("attempt to write a readonly database", "database or disk
    /// is full"), then the call that met it.
    public var description: String {
        let kind = (cause as? SQLiteError).map { " (\($0.primaryDescription))" } ?? ""
        return "the store cannot be opened\(kind): \(cause)"
    }
}

/// A store fault that may pass by itself (a read-only or full disk, a lock, a store not opened yet):
/// the caller answers `wait` and tries again later. Each engine's errors say so themselves, so the push
/// module needs to know no engine.
public protocol TransientStoreFault: Error {
    /// A short name of the fault, to log it once per kind; nil when this error will not pass.
    var transientKind: String? { get }
}

extension StoreUnavailableError: TransientStoreFault {
    public var transientKind: String? { "unavailable" }
}

extension SQLiteError: TransientStoreFault {
    public var transientKind: String? { mayPass ? "\(primaryCode)" : nil }
}

extension SQLitePushStore.Location {
    /// Checks, at start, what no disk recovery can fix: the directory must exist and be a directory, and
    /// the path, if it exists, must be a regular file. Whether the file can be opened and written is
    /// the file system's state, which may change while the component runs; that is left to the open.
    func checkUsable() throws(UnusableStoreError) {
        guard case .file(let path) = self else { return }
        guard !path.isEmpty else { throw UnusableStoreError(reason: "the path is empty") }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            throw UnusableStoreError(
                reason: "\(path) is \(status.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file")")
        }
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "."
        guard stat(directory, &status) == 0 else {
            switch errno {
            case ENOENT: throw UnusableStoreError(reason: "the directory \(directory) does not exist")
            case ENOTDIR: throw UnusableStoreError(reason: "\(directory) is not a directory")
            default: return  // e.g. no permission to look: the open says why, and may work later
            }
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw UnusableStoreError(reason: "\(directory) is not a directory")
        }
    }
}
