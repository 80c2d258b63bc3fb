import Foundation

/// Runs `body` with a unique database path under the temporary directory, then removes the database
/// and its -wal and -shm files.
func withTemporaryDatabasePath<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("store-tests-\(UUID().uuidString).sqlite").path
    defer {
        for file in [path, path + "-wal", path + "-shm"] {
            try? FileManager.default.removeItem(atPath: file)
        }
    }
    return try body(path)
}

/// The permission bits of the file at `path`.
func permissions(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
}
