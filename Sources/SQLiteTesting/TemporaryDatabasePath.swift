import Foundation

/// Runs `body` with a unique database path under the temporary directory, then removes the database
/// and its -wal and -shm files.
public func withTemporaryDatabasePath<T>(_ body: (String) throws -> T) throws -> T {
    let path = uniqueDatabasePath()
    defer { removeDatabaseFiles(path) }
    return try body(path)
}

/// The same for asynchronous tests (e.g. of an actor-owned store).
public func withTemporaryDatabasePath<T>(_ body: (String) async throws -> T) async throws -> T {
    let path = uniqueDatabasePath()
    defer { removeDatabaseFiles(path) }
    return try await body(path)
}

private func uniqueDatabasePath() -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("store-tests-\(UUID().uuidString).sqlite").path
}

private func removeDatabaseFiles(_ path: String) {
    for file in [path, path + "-wal", path + "-shm"] {
        try? FileManager.default.removeItem(atPath: file)
    }
}

/// The permission bits of the file at `path`.
public func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
