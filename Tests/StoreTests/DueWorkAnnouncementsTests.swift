import Foundation
import Synchronization
import Testing

@testable import PostgreSQL
@testable import Store

@Suite struct DueWorkAnnouncementsTests {
    @Test func theEarliestTimeAnnouncedOnTheChannelIsTaken() {
        let heard = [
            ChannelNotification(channel: DueWorkAnnouncements.channel, payload: "300"),
            ChannelNotification(channel: DueWorkAnnouncements.channel, payload: "120"),
            ChannelNotification(channel: "elsewhere", payload: "1"),
            ChannelNotification(channel: DueWorkAnnouncements.channel, payload: "not a time"),
        ]
        #expect(DueWorkAnnouncements.earliest(heard) == 120)
        #expect(DueWorkAnnouncements.earliest(Array(heard[2...])) == nil)
    }

    /// What one instance stores is heard by a watch on another store of the same database, with its
    /// time: a retry, a lease taken on it, a window opened. Times far from any other test's (the
    /// channel is the database's, shared by the tests running beside this one).
    @Test func workStoredThroughAnotherStoreIsAnnouncedWithItsTime() async throws {
        try await TestDatabase.withSchema { url in
            let writer = try await PostgreSQLPushStore.open(url: url)
            let watcher = try await PostgreSQLPushStore.open(url: url)
            let heard = Mutex<[Timestamp]>([])
            let watch = try #require(try watcher.watchDueWork { due in heard.withLock { $0.append(due) } })
            defer { watch.stop() }
            try await waitUntil { heard.withLock { $0.contains(.min) } }

            let id = try await registered(writer).id
            let retryAt: Timestamp = 7_100_000_000_001
            _ = try await writer.enqueueRetry(retry(id, nextAt: retryAt))
            try await waitUntil { heard.withLock { $0.contains(retryAt) } }

            let leaseEnd: Timestamp = 7_100_000_000_900
            #expect(try await writer.claimDueRetries(at: retryAt, limit: 1, leaseUntil: leaseEnd).count == 1)
            try await waitUntil { heard.withLock { $0.contains(leaseEnd) } }

            let windowEnd: Timestamp = 7_100_000_000_002
            try await openWindow(writer, registrationID: id, chat: "bob@example.org", windowEnd: windowEnd)
            try await waitUntil { heard.withLock { $0.contains(windowEnd) } }
        }
    }

    /// Stopped, the thread leaves its poll at once: no announcement is heard after.
    @Test func aStoppedWatchHearsNothingMore() async throws {
        try await TestDatabase.withSchema { url in
            let store = try await PostgreSQLPushStore.open(url: url)
            let heard = Mutex<[Timestamp]>([])
            let watch = try #require(try store.watchDueWork { due in heard.withLock { $0.append(due) } })
            try await waitUntil { heard.withLock { $0.contains(.min) } }
            watch.stop()
            watch.stop()
            try await Task.sleep(for: .milliseconds(200))
            let id = try await registered(store).id
            let retryAt: Timestamp = 7_200_000_000_001
            _ = try await store.enqueueRetry(retry(id, nextAt: retryAt))
            try await Task.sleep(for: .milliseconds(500))
            #expect(!heard.withLock { $0.contains(retryAt) })
        }
    }

    @Test(arguments: StoreKind.sqlite)
    func anSQLiteStoreIsThisProcesssAloneAndAnnouncesNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let watch = try store.watchDueWork { _ in }
            #expect(watch == nil)
        }
    }

    private func waitUntil(
        _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("not heard within 20 s", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
