import Foundation
import HTTPServer
import Sealing
import Store
import Testing
import XMPP
import LocalServers
import TestSupport

@testable import APush

/// Two component processes on one PostgreSQL behind a real ejabberd with its bridge: ejabberd takes
/// several connections for one component JID and routes each stanza to one of them at random, so both
/// instances are active and a publish may land on either.
@Suite(.serialized, .timeLimit(.minutes(4)), .leftToThePlainRun)
struct ActiveActiveEndToEndTests {
    /// Publishes split across both instances (each answers some), every push reaches the App Server
    /// once, a burst's held push goes out once at its window's end, and a policy change made through
    /// the command is obeyed by both.
    @Test func bothInstancesTakePublishesPushEachOnceAndObeyAPolicyChangeMadeOnEither() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        try await PushTestbed.with(
            .ejabberdBridged, coalesceSeconds: window, placement: .process, storeURL: database.url,
            // A push whose answer did not come back would be sent again within the test.
            configure: { $0.upstreamTimeoutSeconds = 3 }, http: .init()
        ) { bed in
            let ports = [try #require(bed.httpPort), UInt16(try TestPorts.next())]
            let second = try bed.launchSecondInstance(log: "second.log", httpPort: ports[1])
            do {
                try await run(bed, ports: ports)
            } catch {
                await second.stop(gracePeriod: .seconds(1))
                throw error
            }
            await second.stop(gracePeriod: .seconds(5))
            #expect(!bed.componentLog("second.log").contains("token-active"), "a token reached the log")
        }
        await database.stop()
    }

    /// One of the two dies (SIGKILL) while a burst it began is held: ejabberd routes to the other at
    /// once, which sends the held push once, at its window's end (it hears of the window through the
    /// store, though it never saw the burst begin), and pushes what comes after.
    @Test func whenOneInstanceDiesTheOtherSendsWhatItHeldAtItsTime() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        try await PushTestbed.with(
            .ejabberdBridged, coalesceSeconds: window, placement: .process, storeURL: database.url, http: .init()
        ) { bed in
            let ports = [try #require(bed.httpPort), UInt16(try TestPorts.next())]
            let second = try bed.launchSecondInstance(log: "second.log", httpPort: ports[1])
            do {
                try await runTakeover(bed, second: second, ports: ports)
            } catch {
                await second.stop(gracePeriod: .seconds(1))
                throw error
            }
            await second.stop(gracePeriod: .seconds(5))
        }
        await database.stop()
    }

    /// Two instances behind ejabberd on one PostgreSQL, the second's clock five minutes ahead (both in
    /// this process, so the second's clock can be set): they keep the times they share on the database's
    /// clock. In each of four chats a burst's first message is pushed at once, the rest are held and
    /// pushed once, with the burst's count, at the window's end, whichever instance opened the window,
    /// took a message or ended it; while the App Server is slow to answer, no push goes twice. On their
    /// own clocks, a window the instance behind opened was ended at once by the one ahead (only a
    /// window the one ahead opened kept its time): four chats, so that the behind one opens some.
    @Test func twoInstancesWhoseClocksDifferByMinutesHoldAndSendBurstsOnTime() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        try await PushTestbed.with(
            .ejabberdBridged, coalesceSeconds: window, storeURL: database.url,
            configure: { $0.upstreamTimeoutSeconds = 3 }
        ) { bed in
            let skew: Timestamp = 5 * 60_000
            let ahead = try await bed.startSecondInstanceInProcess(
                clock: PushClock(
                    now: { PushClock.system.now() + skew }, sleep: { try await PushClock.system.sleep($0 - skew) }))
            defer { ahead.cancel() }
            let key = try await bed.enableDevice(token: "token-skew")
            bed.appServer.delayAnswers(by: .seconds(2))
            var senders: [C2SClient] = []
            for index in 1...4 {
                try await bed.server.register(user: "sender\(index)", password: "pw-sender\(index)")
                senders.append(try await bed.client("sender\(index)"))
            }
            let burstStart = ContinuousClock.now
            for sender in senders { try bed.message(from: sender, to: "alice@localhost", body: "burst 1") }
            for _ in senders {
                #expect(try await bed.nextPush(key: key, timeout: .seconds(20)).summary["count"] as? Int == 1)
            }
            for index in 2...4 {
                for sender in senders { try bed.message(from: sender, to: "alice@localhost", body: "burst \(index)") }
            }
            // Past the bound, the checks below say what came instead.
            for _ in senders {
                let held = try? await bed.nextPush(key: key, timeout: .seconds(20))
                #expect(held?.summary["count"] as? Int == 4, "the held push carries the burst's count")
                #expect(
                    ContinuousClock.now - burstStart >= .seconds(window - 1), "sent at its window's end, not before")
            }
            await bed.expectNoPush(within: .seconds(6))
            var received: [String] = []
            for push in bed.appServer.pushes {
                let summary = try await bed.open(push, key: key)
                received.append("\(summary["chat"] as? String ?? "") \(summary["count"] as? Int ?? 0)")
            }
            let expected = (1...4).flatMap { ["sender\($0)@localhost 1", "sender\($0)@localhost 4"] }
            #expect(received.sorted() == expected, "each chat's first and held push, once each")
            for sender in senders { await sender.close() }
            ahead.cancel()
            await ahead.value
        }
        await database.stop()
    }

    private func runTakeover(_ bed: PushTestbed, second: ServerProcess, ports: [UInt16]) async throws {
        try await waitUntilBothAreActive(ports: ports)
        let key = try await bed.enableDevice(token: "token-survivor")
        let bob = try await bed.client("bob")
        let burstStart = ContinuousClock.now
        try bed.message(from: bob, to: "alice@localhost", body: "one")
        #expect(try await bed.nextPush(key: key, timeout: .seconds(20)).summary["count"] as? Int == 1)
        // The instance that took the first message opened the window: it is the one to die.
        let opener = try #require(try await values(Self.messages, ports: ports).firstIndex(of: 1))
        for body in ["two", "three"] { try bed.message(from: bob, to: "alice@localhost", body: body) }
        try await waitUntil("both messages are taken") { try await sum(Self.messages, ports: ports) == 3 }
        if opener == 0 {
            await bed.stopComponent()  // SIGKILL
        } else {
            await second.stop(signal: SIGKILL, gracePeriod: .seconds(1))
        }
        let survivor = ports[1 - opener]

        let held = try await bed.nextPush(key: key, timeout: .seconds(30))
        #expect(held.summary["count"] as? Int == 3, "the held push carries the burst's latest count")
        let heldAfter = ContinuousClock.now - burstStart
        #expect(heldAfter >= .seconds(window - 1), "sent at its window's end, not before")
        // A liveness bound: without word of the window the survivor would look at its next chore (60 s).
        #expect(heldAfter < .seconds(window + 15), "sent at its window's end, not a minute later")
        await bed.expectNoPush(within: .seconds(3))

        try await Task.sleep(for: .seconds(window))
        let taken = try await sum(Self.messages, ports: [survivor])
        try bed.message(from: bob, to: "alice@localhost", body: "four")
        #expect(try await bed.nextPush(key: key, timeout: .seconds(20)).summary["count"] as? Int == 4)
        await bed.expectNoPush(within: .seconds(2))
        #expect(try await sum(Self.messages, ports: [survivor]) == taken + 1, "the survivor takes what comes")
        await bob.close()
    }

    private func waitUntilBothAreActive(ports: [UInt16]) async throws {
        for port in ports {
            try await waitUntil("both instances are linked and active") {
                let page = try? await HTTPTestClient.request("/metrics", port: port).body
                let linked = page.flatMap { OperationsEndToEndTests.value("apush_link_up", in: $0) } == 1
                let role = try? await role(port: port)
                return linked && role == "active"
            }
        }
    }

    private func run(_ bed: PushTestbed, ports: [UInt16]) async throws {
        try await waitUntilBothAreActive(ports: ports)
        let key = try await bed.enableDevice(token: "token-active")

        // One message in each of several chats: one push each, with its count of 1.
        let senders = (1...8).map { "sender\($0)" }
        var clients: [C2SClient] = []
        for sender in senders {
            try await bed.server.register(user: sender, password: "pw-\(sender)")
            let client = try await bed.client(sender)
            clients.append(client)
            try bed.message(from: client, to: "alice@localhost", body: "hello from \(sender)")
        }
        var chats: [String] = []
        for _ in senders {
            let push = try await bed.nextPush(key: key, timeout: .seconds(20))
            #expect(push.summary["count"] as? Int == 1)
            chats.append(push.summary["chat"] as? String ?? "")
        }
        #expect(chats.sorted() == senders.map { "\($0)@localhost" }.sorted(), "one push for each chat")
        // Longer than an upstream timeout and the first retry: a push sent again would be here.
        await bed.expectNoPush(within: .seconds(6))

        // A burst in one chat: its first message is pushed at once, the rest are held and sent once,
        // with the burst's count, when its window ends.
        let bob = try await bed.client("bob")
        let burstStart = ContinuousClock.now
        try bed.message(from: bob, to: "alice@localhost", body: "burst 1")
        let first = try await bed.nextPush(key: key, timeout: .seconds(20))
        #expect(first.summary["chat"] as? String == "bob@localhost")
        #expect(first.summary["count"] as? Int == 1)
        for index in 2...4 {
            try bed.message(from: bob, to: "alice@localhost", body: "burst \(index)")
        }
        let held = try await bed.nextPush(key: key, timeout: .seconds(20))
        #expect(held.summary["chat"] as? String == "bob@localhost")
        #expect(held.summary["count"] as? Int == 4, "the held push carries the burst's latest count")
        #expect(ContinuousClock.now - burstStart >= .seconds(window - 1), "sent at its window's end, not before")
        await bed.expectNoPush(within: .seconds(6))

        let publishes = senders.count + 4
        let pushes = senders.count + 2
        #expect(try await sum(Self.sent, ports: ports) == pushes, "the instances sent each push once between them")
        #expect(try await sum("apush_coalesced_total", ports: ports) == 1, "one instance sent the held push")
        let byInstance = try await values(#"apush_publishes_total{answer="result"}"#, ports: ports)
        print("active/active: publishes answered by each instance: \(byInstance)")
        #expect(byInstance.reduce(0, +) == publishes, "every publish was answered result, by one instance")
        #expect(byInstance.allSatisfy { $0 > 0 }, "the publishes split across both instances")

        // A policy change through the command holds on both instances: bob's next messages are silenced
        // wherever they land, until the change is undone.
        let alice = try await bed.client("alice", resource: "settings")
        try await submitPolicy(alice, ["muted": ["bob@localhost"]])
        try await Task.sleep(for: .seconds(window))  // the burst's window is over
        let before = try await values(Self.messages, ports: ports)
        let tookNone = { (now: [Int]) in zip(now, before).contains { $0 == $1 } }
        var muted = 0
        // Until each instance has taken one (each message lands on either at random), within a bound.
        while tookNone(try await values(Self.messages, ports: ports)), muted < 30 {
            try bed.message(from: bob, to: "alice@localhost", body: "muted \(muted)")
            muted += 1
            let taken = publishes + muted
            try await waitUntil("the muted message is taken") { try await sum(Self.messages, ports: ports) == taken }
        }
        #expect(!tookNone(try await values(Self.messages, ports: ports)), "each instance took muted messages")
        await bed.expectNoPush(within: .seconds(2))
        let silenced = try await values(#"apush_dropped_total{reason="policy"}"#, ports: ports)
        print("active/active: muted messages silenced by each instance: \(silenced) of \(muted)")
        #expect(silenced.allSatisfy { $0 > 0 }, "both instances silence the muted chat")

        try await submitPolicy(alice, ["muted": []])
        try bed.message(from: bob, to: "alice@localhost", body: "unmuted")
        let unmuted = try await bed.nextPush(key: key, timeout: .seconds(20))
        #expect(unmuted.summary["chat"] as? String == "bob@localhost")
        #expect(unmuted.summary["count"] as? Int == 4 + muted + 1, "a silenced message still counts")
        await bed.expectNoPush(within: .seconds(1))

        // Every push the App Server received, opened: no chat's count was pushed twice.
        var received: [String] = []
        for push in bed.appServer.pushes {
            let summary = try await bed.open(push, key: key)
            received.append("\(summary["chat"] as? String ?? "") \(summary["count"] as? Int ?? 0)")
        }
        #expect(received.count == pushes + 1)
        #expect(Set(received).count == received.count, "pushed twice: \(received.sorted())")
        for client in clients + [alice, bob] { await client.close() }
    }

    /// The coalescing window, in seconds: long enough for the burst to fall inside it.
    private let window = 4

    private static let sent = #"apush_pushes_total{kind="message",outcome="sent"}"#
    /// Message publishes an instance took (pushed, held or silenced).
    private static let messages = #"apush_events_total{kind="message"}"#

    /// The value of `series` on each instance's /metrics page (0 when absent).
    private func values(_ series: String, ports: [UInt16]) async throws -> [Int] {
        var values: [Int] = []
        for port in ports {
            let page = try await HTTPTestClient.request("/metrics", port: port).body
            values.append(Int(OperationsEndToEndTests.value(series, in: page) ?? 0))
        }
        return values
    }

    private func sum(_ series: String, ports: [UInt16]) async throws -> Int {
        try await values(series, ports: ports).reduce(0, +)
    }

    private func role(port: UInt16) async throws -> String? {
        let health = try await HTTPTestClient.request("/health", port: port)
        return try OperationsEndToEndTests.json(health.body)["role"] as? String
    }

    /// Runs the policy command as a client does: execute, then complete with `values`.
    private func submitPolicy(_ client: C2SClient, _ values: [String: [String]]) async throws {
        let node = "urn:xmpp:apush:0#policy"
        let first = try await client.executeCommand(on: PushTestbed.componentJID, node: node)
        let form = DataForm(type: .submit, fields: values.map { DataForm.Field(variable: $0.key, values: $0.value) })
        let done = try await client.executeCommand(
            on: PushTestbed.componentJID, node: node, action: .complete, after: first, form: form)
        #expect(done.findString("@status") == "completed")
    }
}
