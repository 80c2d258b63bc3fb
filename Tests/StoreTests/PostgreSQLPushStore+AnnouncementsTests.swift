import Foundation
import Synchronization
import Testing
import XMPPTesting

@testable import PostgreSQL
@testable import Store

@Suite struct PostgreSQLPushStoreAnnouncementsTests {
    @Test func theEarliestTimeAnnouncedIsTaken() {
        #expect(PostgreSQLPushStore.earliestDue(["300", "120", "not a time"]) == 120)
        #expect(PostgreSQLPushStore.earliestDue(["not a time"]) == nil)
    }

    /// What one instance stores is heard by a watch on another store of the same database, with its
    /// time: a retry, a lease taken on it, a window opened. On a server of its own: the channel is the
    /// database's, and a batch is announced by its earliest time, so the other tests' work would hide
    /// these times.
    @Test func workStoredThroughAnotherStoreIsAnnouncedWithItsTime() async throws {
        try await withOwnPostgreSQLServer { server in
            let url = server.url
            let writer = try await PostgreSQLPushStore.open(url: url)
            let watcher = try await PostgreSQLPushStore.open(url: url)
            let heard = Mutex<[Timestamp]>([])
            let watch = try #require(try watcher.watchDueWork { due in heard.withLock { $0.append(due) } })
            defer { watch.stop() }
            try await waitUntil("the watch listens", timeout: .seconds(20)) { heard.withLock { $0.contains(.min) } }

            let id = try await registered(writer).id
            let retryAt: Timestamp = 7_100_000_000_001
            _ = try await writer.enqueueRetry(retry(id, nextAt: retryAt))
            try await waitUntil("the retry's time is heard", timeout: .seconds(20)) {
                heard.withLock { $0.contains(retryAt) }
            }

            let leaseEnd: Timestamp = 7_100_000_000_900
            #expect(try await writer.claimDueRetries(at: retryAt, limit: 1, leaseUntil: leaseEnd).count == 1)
            try await waitUntil("the lease's end is heard", timeout: .seconds(20)) {
                heard.withLock { $0.contains(leaseEnd) }
            }

            let windowEnd: Timestamp = 7_100_000_000_002
            try await openWindow(writer, registrationID: id, chat: "bob@example.org", windowEnd: windowEnd)
            try await waitUntil("the window's end is heard", timeout: .seconds(20)) {
                heard.withLock { $0.contains(windowEnd) }
            }
        }
    }

    /// Stopped, the thread leaves its poll at once: no announcement is heard after.
    @Test func aStoppedWatchHearsNothingMore() async throws {
        try await withOwnPostgreSQLServer { server in
            let url = server.url
            let store = try await PostgreSQLPushStore.open(url: url)
            let heard = Mutex<[Timestamp]>([])
            let watch = try #require(try store.watchDueWork { due in heard.withLock { $0.append(due) } })
            try await waitUntil("the watch listens", timeout: .seconds(20)) { heard.withLock { $0.contains(.min) } }
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

    /// A message one instance tells is heard by every instance watching, itself included; one over the
    /// limit is refused, not cut.
    @Test func aMessageToldIsHeardByEveryInstanceWatching() async throws {
        try await TestDatabase.withSchema { url in
            let (teller, other) = (
                try await PostgreSQLPushStore.open(url: url), try await PostgreSQLPushStore.open(url: url)
            )
            let heard = Mutex<[String]>([])
            let watches = try [teller, other].map { store in
                try #require(try store.watchPeers { message in heard.withLock { $0.append(message) } })
            }
            defer { watches.forEach { $0.stop() } }
            let message = "answer <iq id='\(UUID().uuidString)'/>"
            // Watching starts on its own thread: tell until both hear it.
            try await waitUntil("both instances hear it", timeout: .seconds(20)) {
                try? await teller.tellPeers(message)
                return heard.withLock { $0.filter { $0 == message }.count >= 2 }
            }
            await #expect(throws: StoreCapacityError.self) {
                try await teller.tellPeers(String(repeating: "x", count: peerMessageLimit + 1))
            }
        }
    }

    @Test(arguments: StoreKind.sqlite)
    func anSQLiteStoreIsThisProcesssAloneAndTellsNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let due = try store.watchDueWork { _ in }
            let peers = try store.watchPeers { _ in }
            #expect(due == nil && peers == nil)
            try await store.tellPeers("answer <iq/>")
        }
    }
}
