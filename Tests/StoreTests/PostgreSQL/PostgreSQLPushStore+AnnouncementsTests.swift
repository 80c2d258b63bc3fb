import LocalServers
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import PostgreSQL
import Sealing
import SQLCore
import SQLite
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
            let writer = try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret)
            let watcher = try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret)
            let heard = Mutex<[Timestamp]>([])
            let watch = try #require(
                try watcher.watchDueWork({ due in heard.withLock { $0.append(due) } }, rejected: {}))
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
            let store = try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret)
            let heard = Mutex<[Timestamp]>([])
            let watch = try #require(try store.watchDueWork({ due in heard.withLock { $0.append(due) } }, rejected: {}))
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
                try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret),
                try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret)
            )
            let heard = Mutex<[String]>([])
            let watches = try [teller, other].map { store in
                try #require(
                    try store.watchPeers(
                        { message in heard.withLock { $0.append(message) } }, listening: {}, rejected: {}))
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

    /// A peers' watch says when it listens: once it starts, and again once the database is back from a
    /// restart (what was told meanwhile was lost), when it hears what is told again.
    @Test func aPeersWatchSaysWhenItListensAgainAfterARestart() async throws {
        try await withOwnPostgreSQLServer { server in
            let store = try await PostgreSQLPushStore.open(
                url: server.url, componentSecret: TestDatabase.componentSecret)
            let listened = Mutex(0)
            let heard = Mutex<[String]>([])
            let watch = try #require(
                try store.watchPeers(
                    { message in heard.withLock { $0.append(message) } },
                    listening: { listened.withLock { $0 += 1 } }, rejected: {}))
            defer { watch.stop() }
            try await waitUntil("the watch listens", timeout: .seconds(20)) { listened.withLock { $0 == 1 } }
            try await server.restart()
            try await waitUntil("the watch listens again", timeout: .seconds(30)) { listened.withLock { $0 == 2 } }
            try await waitUntil("it hears what is told", timeout: .seconds(20)) {
                try? await store.tellPeers("after the restart")
                return heard.withLock { $0.contains("after the restart") }
            }
        }
    }

    /// Anyone who may connect to the database may notify on its channels, without a right on the
    /// schema. What another session sends without the store's signature (none, a wrong one, another
    /// component's, one made for the other channel) is dropped unread and reported, on both channels;
    /// a session without the key cannot have the database sign for it; what an instance sends, up to
    /// the longest message, is heard.
    @Test func aNotificationNotSignedWithTheStoresKeyIsDroppedAndReported() async throws {
        try await withOwnPostgreSQLServer { server in
            let url = server.url
            let store = try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret)
            let stranger = try await PostgreSQLPushStore.open(url: url, componentSecret: "another component's secret")
            let dueHeard = Mutex<[Timestamp]>([])
            let peersHeard = Mutex<[String]>([])
            let rejected = Mutex<[String]>([])
            let watches = [
                try #require(
                    try store.watchDueWork(
                        { due in dueHeard.withLock { $0.append(due) } },
                        rejected: { rejected.withLock { $0.append("due") } })),
                try #require(
                    try store.watchPeers(
                        { message in peersHeard.withLock { $0.append(message) } }, listening: {},
                        rejected: { rejected.withLock { $0.append("peers") } })),
            ]
            defer { watches.forEach { $0.stop() } }
            try await waitUntil("both watches listen", timeout: .seconds(20)) {
                try? await store.tellPeers("answer listening")
                return dueHeard.withLock { $0.contains(.min) }
                    && peersHeard.withLock { $0.contains("answer listening") }
            }

            let forger = try Connection(url)
            let key = SharedKey(secret: TestDatabase.componentSecret, label: PostgreSQLPushStore.notificationKeyLabel)
            let macForDue = PostgreSQLPushStore.hex(key.mac(Array("apush_due answer forged 4".utf8)))
            try forger.execute(
                """
                SELECT pg_notify('apush_peers', 'answer forged 1'),
                    pg_notify('apush_peers', repeat('0', 64) || ' answer forged 2'),
                    pg_notify('apush_peers', $1),
                    pg_notify('apush_due', '1000'),
                    pg_notify('apush_due', repeat('ab', 32) || ' 2000'),
                    notify_signed('apush_peers', 'answer forged 5'),
                    notify_signed('apush_due', '5000')
                """, [.text(macForDue + " answer forged 4")])
            try await stranger.tellPeers("answer forged 3")
            _ = try await stranger.enqueueRetry(retry(try await registered(stranger).id, nextAt: 3000))
            try await waitUntil("the forgeries are rejected", timeout: .seconds(20)) {
                rejected.withLock { $0.count } == 7
            }

            let longest = "answer " + String(repeating: "x", count: peerMessageLimit - 7)
            try await store.tellPeers(longest)
            _ = try await store.enqueueRetry(retry(try await registered(store, token: "token-2").id, nextAt: 6000))
            try await waitUntil("what the instance sent is heard", timeout: .seconds(20)) {
                peersHeard.withLock { $0.contains(longest) } && dueHeard.withLock { $0.contains(6000) }
            }
            #expect(rejected.withLock { $0.sorted() } == ["due", "due", "due", "peers", "peers", "peers", "peers"])
            #expect(!peersHeard.withLock { $0.contains { $0.contains("forged") } })
            #expect(
                dueHeard.withLock { $0.allSatisfy { [.min, 6000].contains($0) } }, "heard \(dueHeard.withLock { $0 })")
        }
    }

    /// Only a payload of 64 lower-case hex digits, a space and a body whose MAC they are, for this
    /// channel, gives its body.
    @Test func aPayloadIsVerifiedBeforeItsBodyIsRead() {
        let key = SharedKey(secret: "secret", label: PostgreSQLPushStore.notificationKeyLabel)
        let mac = PostgreSQLPushStore.hex(key.mac(Array("apush_peers answer <iq/>".utf8)))
        let verify = { PostgreSQLPushStore.verifiedBody($0, channel: "apush_peers", key: key) }
        #expect(verify(mac + " answer <iq/>") == "answer <iq/>")
        #expect(PostgreSQLPushStore.verifiedBody(mac + " answer <iq/>", channel: "apush_due", key: key) == nil)
        #expect(verify(mac.uppercased() + " answer <iq/>") == nil)
        #expect(verify(mac + " answer <iq/> ") == nil)
        #expect(verify(mac + "answer <iq/>") == nil)
        #expect(verify(String(mac.dropLast(2)) + "zz answer <iq/>") == nil)
        #expect(verify(mac) == nil && verify(mac + " ") == nil && verify("") == nil && verify("é") == nil)
    }

    @Test(arguments: StoreKind.sqlite)
    func anSQLiteStoreIsThisProcesssAloneAndTellsNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let due = try store.watchDueWork({ _ in }, rejected: {})
            let peers = try store.watchPeers({ _ in }, listening: {}, rejected: {})
            #expect(due == nil && peers == nil)
            try await store.tellPeers("answer <iq/>")
        }
    }
}
