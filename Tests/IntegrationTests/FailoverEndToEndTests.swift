import Foundation
import HTTPServer
import Store
import Testing
import LocalServers
import TestSupport

/// Two component processes on one PostgreSQL behind a real Prosody, which takes one connection per
/// component JID: the second stands by, and takes over when the first dies.
@Suite(.serialized, .timeLimit(.minutes(3)), .leftToThePlainRun)
struct FailoverEndToEndTests {
    /// Instance A holds the link; B is refused with `conflict` (what Prosody really sends) and stands
    /// by. A is killed with SIGKILL in the middle of a burst: B connects within seconds, sends the held
    /// push once with the burst's count at the window's end, and pushes a new message for the
    /// registration made through A.
    @Test func aStandbyTakesOverWhenTheActiveInstanceDiesAndSendsTheHeldPushOnce() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: window, placement: .process, storeURL: database.url,
            http: .init()
        ) { bed in
            let activePort = try #require(bed.httpPort)
            let standbyPort = UInt16(try TestPorts.next())
            let standby = try bed.launchSecondInstance(log: "standby.log", httpPort: standbyPort)
            do {
                try await run(bed, activePort: activePort, standby: standby, standbyPort: standbyPort)
            } catch {
                await standby.stop(gracePeriod: .seconds(1))
                throw error
            }
            await standby.stop(gracePeriod: .seconds(5))
        }
        await database.stop()
    }

    private func run(
        _ bed: PushTestbed, activePort: UInt16, standby: ServerProcess, standbyPort: UInt16
    ) async throws {
        try await waitUntil("the second instance stands by") {
            (try? await role(port: standbyPort)) == "standby"
        }
        let standbyLog = { bed.componentLog("standby.log") }
        #expect(standbyLog().contains("standing by"))
        #expect(standbyLog().contains("conflict"), "Prosody refuses the second stream with conflict")
        #expect(standbyLog().components(separatedBy: "standing by").count == 2, "said once, not each second")
        #expect(try await role(port: activePort) == "active")

        let key = try await bed.enableDevice(token: "token-failover")
        let bob = try await bed.client("bob")
        let burstStart = ContinuousClock.now
        try bed.message(from: bob, to: "alice@localhost", body: "one")
        #expect(try await bed.nextPush(key: key).summary["count"] as? Int == 1)
        for body in ["two", "three"] {
            try bed.message(from: bob, to: "alice@localhost", body: body)
        }
        // The active instance takes both publishes and holds their notice in the store.
        let store = try await bed.openStore()
        try await waitUntil("the burst's notice is held in the store") {
            guard
                let registration = try await store.registration(
                    domain: "localhost", token: "token-failover", account: "alice@localhost")
            else { return false }
            let chat = try await store.chats(registrationID: registration.id).first { $0.chat == "bob@localhost" }
            return chat?.count == 3 && chat?.held != nil
        }

        await bed.stopComponent()  // SIGKILL
        let killed = ContinuousClock.now
        try await waitUntil("the standby takes over", timeout: .seconds(10)) {
            (try? await role(port: standbyPort)) == "active"
        }
        let takeover = ContinuousClock.now - killed
        print("failover: the standby was active \(takeover) after the active instance was killed")
        #expect(takeover < .seconds(10))
        #expect(standbyLog().contains("active now"))

        let held = try await bed.nextPush(key: key, timeout: .seconds(20))
        let heldAfter = ContinuousClock.now - burstStart
        print("failover: the held push arrived \(heldAfter) after the burst began (window \(window) s)")
        #expect(held.summary["count"] as? Int == 3, "the held push carries the burst's latest count")
        #expect(heldAfter >= .seconds(window - 1), "sent at its window's end, not before")
        await bed.expectNoPush(within: .seconds(3))

        try await Task.sleep(for: .seconds(window))  // the burst's window is over
        try bed.message(from: bob, to: "alice@localhost", body: "after the takeover")
        let after = try await bed.nextPush(key: key, timeout: .seconds(20))
        #expect(after.summary["chat"] as? String == "bob@localhost")
        await bed.expectNoPush(within: .seconds(1))
        #expect(!standbyLog().contains("token-failover"), "a token reached the log")
        await bob.close()
    }

    /// The coalescing window, in seconds: long enough that the takeover falls inside it.
    private let window = 6

    private func role(port: UInt16) async throws -> String? {
        let health = try await HTTPTestClient.request("/health", port: port)
        let json = try JSONSerialization.jsonObject(with: Data(health.body.utf8)) as? [String: Any]
        return json?["role"] as? String
    }
}
