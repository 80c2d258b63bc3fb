import Foundation
import Testing
import XMPPTesting

/// The component binary on a PostgreSQL store (`APUSH_STORE` = its URL) behind a real Prosody.
@Suite(.serialized, .timeLimit(.minutes(3)))
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
            try bed.message(from: bob, to: "alice@localhost", body: "after")
            let push = try await bed.nextPush(key: key, timeout: .seconds(20))
            #expect(push.summary["chat"] as? String == "bob@localhost")
            #expect(!bed.componentLog.contains(String(password)), "the password reached the log")
            #expect(!bed.componentLog.contains("token-postgresql"), "a token reached the log")
            await bob.close()
        }
        await database.stop()
    }
}
