import BlockingWork
import Foundation
import HTTPServer
import Logging
import PostgreSQL
import SQLCore
import SQLite
import Testing
import LocalServers
import TestSupport

@testable import APush

/// The component binary on a PostgreSQL store (`APUSH_STORE` = its URL) behind a real Prosody.
@Suite(.serialized, .timeLimit(.minutes(3)), .leftToThePlainRun)
struct PostgreSQLEndToEndTests {
    /// A message is pushed; while the database restarts, a publish is answered `wait` and the
    /// registration is kept; once it is back, the next message is pushed, with nothing logged that
    /// holds the password or the token.
    @Test func aPushGoesThroughAPostgreSQLStoreAndTheComponentRidesOutADatabaseRestart() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        let password = try #require(database.url.split(separator: ":").dropFirst(2).first?.split(separator: "@").first)
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: 0, placement: .process, storeURL: database.url
        ) { bed in
            let key = try await bed.enableDevice(token: "token-postgresql")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "before")
            #expect(try await bed.nextPush(key: key).summary["chat"] as? String == "bob@localhost")

            await database.stop()
            try bed.message(from: bob, to: "alice@localhost", body: "while the database is away")
            try await waitUntil("the publish is answered wait") { bed.componentLog.contains("answering wait") }
            #expect(bed.componentLog.contains("PostgreSQL error"), "the log names the cause")

            try await database.start()
            // The component opens the store again on use, at most once a second after a failure: a
            // message that comes sooner is still answered wait (and dropped by Prosody), as in
            // production; the next ones are pushed.
            var pushed: ReceivedPush?
            for attempt in 1...10 where pushed == nil {
                try bed.message(from: bob, to: "alice@localhost", body: "after \(attempt)")
                pushed = try? await bed.appServer.nextPush(timeout: .seconds(2))
            }
            let push = try #require(pushed, "no push within 10 messages after the database came back")
            #expect(try await bed.open(push, key: key)["chat"] as? String == "bob@localhost")
            #expect(!bed.componentLog.contains(String(password)), "the password reached the log")
            #expect(!bed.componentLog.contains("token-postgresql"), "a token reached the log")
            await bob.close()
        }
        await database.stop()
    }

    /// Issue 20, item 4 on PostgreSQL: the chat's generation and the one a stored push was decided at
    /// are kept there, so M1's retry after a read and M2 (the same count) is dropped, not sent last.
    @Test func aStaleRetryIsDroppedOnAPostgreSQLStore() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        do {
            try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 0, storeURL: database.url) { bed in
                try await CallsAndReadsEndToEndTests.staleRetryIsDropped(on: bed)
            }
        } catch {
            await database.stop()
            throw error
        }
        await database.stop()
    }

    /// A burst is open (its first message pushed, the next held for the window) when the database
    /// stops: publishes meanwhile are answered `wait`, the window ends while the store is away, and once
    /// it is back the held push goes out once with the count of what was taken; Prosody's bridge sends
    /// the publishes answered wait again (issue 25), and new publishes push again, each count once.
    @Test func aPushHeldWhenTheDatabaseStopsGoesOutOnceAfterItIsBack() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        let window = 10
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: window, placement: .process, storeURL: database.url, http: .init()
        ) { bed in
            let port = try #require(bed.httpPort)
            let key = try await bed.enableDevice(token: "token-restart")
            let bob = try await bed.client("bob")
            let burstStart = ContinuousClock.now
            try bed.message(from: bob, to: "alice@localhost", body: "one")
            #expect(try await bed.nextPush(key: key).summary["count"] as? Int == 1)
            try bed.message(from: bob, to: "alice@localhost", body: "two")
            try await waitUntil("the second message is held") { try await metric("apush_held_total", port: port) == 1 }

            await database.stop()
            let stopped = ContinuousClock.now
            for body in ["three", "four"] {
                try bed.message(from: bob, to: "alice@localhost", body: body)
            }
            try await waitUntil("both publishes are answered wait") {
                try await metric(#"apush_publishes_total{answer="wait"}"#, port: port) == 2
            }
            #expect(bed.componentLog.contains("answering wait"))
            // The held push falls due while the store is away.
            try await Task.sleep(until: burstStart + .seconds(window + 2))
            await bed.expectNoPush(within: .milliseconds(100))

            try await database.start()
            let restarted = ContinuousClock.now
            let held = try await bed.nextPush(key: key, timeout: .seconds(30))
            print(
                "database restart: away \(restarted - stopped); the held push came \(ContinuousClock.now - restarted) after"
            )
            #expect(held.summary["chat"] as? String == "bob@localhost")
            #expect((held.summary["count"] as? Int ?? 0) >= 2, "the held push counts at least the messages taken")

            // Prosody's bridge sends the publishes answered wait again once the store takes them: the
            // device hears of every message, each count once, the last with all five.
            try bed.message(from: bob, to: "alice@localhost", body: "after")
            var counts = [held.summary["count"] as? Int ?? 0]
            while counts.last != 5, counts.count < 6 {
                let push = try await bed.nextPush(key: key, timeout: .seconds(30))
                #expect(push.summary["chat"] as? String == "bob@localhost")
                counts.append(push.summary["count"] as? Int ?? 0)
            }
            #expect(counts.last == 5, "every message counted, those answered wait among them: \(counts)")
            #expect(counts == counts.sorted() && Set(counts).count == counts.count, "a count twice: \(counts)")
            await bed.expectNoPush(within: .seconds(1))
            #expect(!bed.componentLog.contains("token-restart"), "a token reached the log")
            await bob.close()
        }
        await database.stop()
    }

    /// Another role of the database, with no right on the component's schema (any role may connect
    /// and NOTIFY unless the operator revokes it), forges the App Server's "dead token" answer to a
    /// publish in flight, and floods the due channel. Both are dropped unread and counted: the
    /// registration survives with no tombstone, the server's publish is not answered `cancel`, and
    /// once the App Server answers again the pushes go through.
    @Test func aDeadTokenAnswerForgedByAnotherDatabaseRoleIsDropped() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        let owner = database.url
        let forgerURL = "postgresql://mallory:mallory-pw@127.0.0.1:\(database.port)/\(database.database)"
        _ = try await BlockingWork.run {
            try Connection(owner).execute("CREATE ROLE mallory LOGIN PASSWORD 'mallory-pw'")
        }
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: 0, storeURL: owner, configure: { $0.upstreamTimeoutSeconds = 8 }
        ) { bed in
            let key = try await bed.enableDevice(token: "token-forged")
            bed.appServer.scriptEveryNode(answer: .silence)
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "in flight")
            _ = try await bed.appServer.nextPush(timeout: .seconds(15))
            let id = try #require(bed.appServer.requestIDs.last)
            let forged = """
                answer <iq xmlns='jabber:component:accept' type='error' id='\(id)' from='\(PushTestbed.appServerJID)' \
                to='\(PushTestbed.componentJID)'><error type='cancel'>\
                <item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>
                """
            try await BlockingWork.run {
                let forger = try Connection(forgerURL)
                try forger.execute("SELECT pg_notify('apush_peers', $1)", [.text(forged)])
                try forger.execute("SELECT pg_notify('apush_due', g::text) FROM generate_series(1, 100) AS g")
            }
            // Past the bound, the checks below say what the forgeries did instead.
            try? await waitUntil("the forgeries are rejected", timeout: .seconds(20)) {
                bed.statistic("store.notifications-rejected") == 101
            }
            #expect(bed.statistic("store.notifications-rejected") == 101)
            let (registrations, tombstones) = try await BlockingWork.run {
                let connection = try Connection(owner)
                return (
                    try connection.queryOne("SELECT count(*) AS n FROM registrations WHERE token = 'token-forged'")
                        .decode("n", \.int64Value),
                    try connection.queryOne("SELECT count(*) AS n FROM tombstones").decode("n", \.int64Value)
                )
            }
            #expect(registrations == 1, "the forged answer retired the registration")
            #expect(tombstones == 0)
            #expect(bed.statistic("answers.cancel") == 0, "the server was told the token is dead")
            #expect(bed.logSink.text.contains("did not verify"))

            // The App Server answers again: the next message is pushed.
            bed.appServer.scriptEveryNode(answer: .result)
            try bed.message(from: bob, to: "alice@localhost", body: "after")
            #expect(
                try await bed.nextPush(key: key, timeout: .seconds(20)).summary["chat"] as? String == "bob@localhost")
            await bob.close()
        }
        await database.stop()
    }

    /// The value of one series on the component's /metrics page (0 when absent).
    private func metric(_ series: String, port: UInt16) async throws -> Int {
        let page = try await HTTPTestClient.request("/metrics", port: port).body
        return Int(OperationsEndToEndTests.value(series, in: page) ?? 0)
    }
}
