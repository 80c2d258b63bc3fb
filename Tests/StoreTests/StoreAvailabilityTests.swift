import CSQLite
import Foundation
import SQLCore
import SQLite
import SQLiteTesting
import Synchronization
import Testing
import Sockets
import XMPP
import TestSupport

@testable import Store

/// Where the store stops working: a location that can never work fails at start; a file system that
/// refuses for now (read-only, full) leaves the store unavailable, each call failing at once, until
/// a call finds it writable again and opens (and migrates) it.
@Suite struct StoreAvailabilityTests {
    private static let request = RegistrationRequest(
        domain: "example.org", token: "token-1", pushModule: "fcm",
        account: "alice@example.org", deviceKey: [1, 2, 3],
        calls: .none, wantsReads: false)

    private static func registrations(_ store: SQLitePushStore) async throws -> [Registration] {
        try await store.registrations(matching: RegistrationFilter(), limit: 10, offset: 0)
    }

    @Test func aMissingDirectoryFailsAtStart() throws {
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apush-missing-\(UUID().uuidString)")
        let error = #expect(throws: UnusableStoreError.self) {
            try SQLitePushStore(.file(path: missing.appendingPathComponent("apush.sqlite").path))
        }
        #expect(error?.reason == "the directory \(missing.path)/ does not exist")
        #expect(throws: UnusableStoreError(reason: "the path is empty")) { try SQLitePushStore(.file(path: "")) }
    }

    @Test func aDirectoryAsThePathOrAFileAsItsDirectoryFailsAtStart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(throws: UnusableStoreError(reason: "\(directory.path) is a directory")) {
            try SQLitePushStore(.file(path: directory.path))
        }
        let file = directory.appendingPathComponent("file")
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        #expect(throws: UnusableStoreError(reason: "\(file.path)/ is not a directory")) {
            try SQLitePushStore(.file(path: file.path + "/apush.sqlite"))
        }
    }

    /// What the push path answers `wait` to, named by kind for its once-a-minute log, whatever the engine.
    @Test func theFaultsThatMayPassAreTransientStoreFaults() {
        let faults: [any Error] = [
            StoreUnavailableError(cause: SQLiteError(code: SQLITE_READONLY, message: "")),
            SQLiteError(code: sqliteIOErrorWrite, message: ""),
            SQLiteError(code: SQLITE_CORRUPT, message: ""),
        ]
        #expect(faults.map { ($0 as? any TransientStoreFault)?.transientKind } == ["unavailable", "10", nil])
    }

    @Test func aFileThatIsNoDatabaseFailsAtStart() throws {
        try withTemporaryDatabasePath { path in
            #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x41, count: 4096)))
            let error = #expect(throws: UnusableStoreError.self) { try SQLitePushStore(.file(path: path)) }
            #expect(error?.reason.contains("not a database") == true)
        }
    }

    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aStoreReadOnlyAtStartIsUnavailableUntilItIsWritableAgain() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        let path = mount.directory.appendingPathComponent("apush.sqlite").path
        var first: SQLitePushStore? = try SQLitePushStore(.file(path: path))
        _ = try await first?.register(Self.request, freshCollapseKey: [7], now: 1)
        // The file system turns read-only only once nothing has a file on it open for writing: the
        // store must be gone, and under a loaded full suite the kernel has been seen busy a moment longer.
        weak let closing = first
        first = nil
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                if closing == nil {
                    try mount.setReadOnly(true)
                    break
                }
            } catch let error as SystemError where error.errno == EBUSY && ContinuousClock.now < deadline {}
            try await Task.sleep(for: .milliseconds(50))
        }
        let store = try SQLitePushStore(.file(path: path), reopenInterval: .zero)
        #expect(store.unavailableAtStart?.description.contains("readonly") == true)
        let error = await #expect(throws: StoreUnavailableError.self) { try await Self.registrations(store) }
        #expect((error?.cause as? SQLiteError)?.primaryCode == SQLITE_READONLY)
        try mount.setReadOnly(false)
        #expect(try await Self.registrations(store).map(\.token) == ["token-1"])
    }

    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aStoreCreatedWhenTheDiskHasRoomAgainIsMigratedThen() async throws {
        let mount = try ScratchMount(megabytes: 1)
        defer { mount.remove() }
        try mount.fill()
        let heard = Mutex<[String]>([])
        let store = try SQLitePushStore(
            .file(path: mount.directory.appendingPathComponent("apush.sqlite").path),
            reopenInterval: .zero, statementObserver: { sql, _ in heard.withLock { $0.append(sql) } })
        #expect(store.unavailableAtStart != nil)
        await #expect(throws: StoreUnavailableError.self) {
            try await store.register(Self.request, freshCollapseKey: [7], now: 1)
        }
        mount.emptyFiller()
        #expect(try await store.register(Self.request, freshCollapseKey: [7], now: 1).token == "token-1")
        #expect(try await store.run { try $0.userVersion } == SQLitePushStore.migrations.last?.version)
        // The connection opened late reports its statements as the first would have.
        #expect(heard.withLock { $0.contains { $0.hasPrefix("INSERT INTO registrations") } })
    }

    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func anUnavailableStoreIsTriedAgainAtMostOncePerInterval() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        try mount.setReadOnly(true)
        let store = try SQLitePushStore(
            .file(path: mount.directory.appendingPathComponent("apush.sqlite").path),
            reopenInterval: .seconds(3600))
        try mount.setReadOnly(false)
        // Writable again, but the last try was just now: this call fails without trying.
        await #expect(throws: StoreUnavailableError.self) { try await Self.registrations(store) }
    }
}
