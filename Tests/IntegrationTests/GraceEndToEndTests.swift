import Foundation
import HTTPServer
import Store
import Testing
import XMLStream
import XMPP
import LocalServers
import Synchronization
import TestSupport

@testable import APush

/// Grace end to end, on each bridged server (docs/wire-contract.md, Grace): alice's desktop, a second
/// session of her account without push, writes to carol, and its messages reach the component as the
/// account's own (the bridges forward them for her phone's registration): she is active there. Bob's
/// messages meanwhile wake nothing; one push comes with the latest count once the desktop falls silent
/// for the grace, none if it read bob's chat. The waits are liveness bounds, never timings.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct GraceEndToEndTests {
    /// Short, so the tests end soon; long enough for a step to follow the desktop's message in it.
    static let graceSeconds = 5

    static func withGrace(
        _ server: PushTestbed.Server, placement: PushTestbed.Placement = .inProcess,
        http: HTTPServer.Settings? = nil, _ body: (PushTestbed) async throws -> Void
    ) async throws {
        try await PushTestbed.with(
            server, coalesceSeconds: 0, placement: placement,
            configure: { $0.defaults.graceSeconds = graceSeconds }, http: http, body)
    }

    /// The desktop writes to carol; returns once the component has seen it (`reads` counts the
    /// account's own messages and markers it has taken, on this testbed).
    static func desktopWrites(
        _ desktop: C2SClient, on bed: PushTestbed, reads: @escaping () async -> Int64
    ) async throws {
        let before = await reads()
        try bed.message(from: desktop, to: "carol@localhost", body: "from my desk")
        try await waitUntil("the component sees the desktop's message") { await reads() > before }
    }

    static func inProcessReads(_ bed: PushTestbed) -> () async -> Int64 {
        { bed.statistic("events.read") }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func whileTheDesktopChatsNothingGoesThenOnePushWithTheLatestCount(on server: PushTestbed.Server) async throws {
        try await Self.withGrace(server) { bed in
            let key = try await bed.enableDevice(token: "token-grace", reads: true)
            let desktop = try await bed.client("alice", resource: "desktop")
            let bob = try await bed.client("bob")
            for index in 1...3 {
                try await Self.desktopWrites(desktop, on: bed, reads: Self.inProcessReads(bed))
                try bed.message(from: bob, to: "alice@localhost", body: "grace \(index)", id: "grace-\(index)")
                try await waitUntil("bob's message \(index) is held") { bed.statistic("coalesced.held") == index }
            }
            #expect(bed.appServer.pushes.isEmpty, "the phone got nothing while the desktop chatted")
            // The desktop falls silent: once the grace is over, one push with the latest count.
            let push = try await bed.nextPush(key: key)
            #expect(push.summary["kind"] as? String == "message")
            #expect(push.summary["chat"] as? String == "bob@localhost")
            #expect(push.summary["count"] as? Int == 3)
            await bed.expectNoPush(within: .seconds(2))
            await desktop.close()
            await bob.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func whenTheDesktopReadsTheChatDuringGraceNothingGoesAtAll(on server: PushTestbed.Server) async throws {
        try await Self.withGrace(server) { bed in
            _ = try await bed.enableDevice(token: "token-grace-read", reads: true)
            let desktop = try await bed.client("alice", resource: "desktop")
            let bob = try await bed.client("bob")
            try await Self.desktopWrites(desktop, on: bed, reads: Self.inProcessReads(bed))
            for index in 1...2 {
                try bed.message(from: bob, to: "alice@localhost", body: "read me \(index)", id: "read-\(index)")
            }
            try await waitUntil("bob's messages are held") { bed.statistic("coalesced.held") == 2 }
            let reads = bed.statistic("events.read")
            try desktop.send(
                Element.message(
                    type: .chat, id: "seen", to: try JID("bob@localhost"),
                    children: [Element("displayed", namespace: Namespace.chatMarkers, ["id": "read-2"])],
                    namespace: Namespace.client))
            try await waitUntil("the component sees the desktop read bob's chat") {
                bed.statistic("events.read") > reads
            }
            // No message push at the grace's end, and no read push for a notice the phone never showed.
            await bed.expectNoPush(within: .seconds(Self.graceSeconds + 3))
            #expect(bed.appServer.pushes.isEmpty)
            await desktop.close()
            await bob.close()
        }
    }

    /// With `grace-when` = `connected`, a desktop that is only available (it writes nothing) holds bob's
    /// messages; once it goes away, one push comes with the latest count and the badge.
    @Test(arguments: PushTestbed.bridgedServers)
    func whileTheDesktopIsAvailableNothingGoesAndOnceItIsAwayOnePushComes(on server: PushTestbed.Server)
        async throws
    {
        try await PushTestbed.with(
            server, coalesceSeconds: 0,
            configure: {
                $0.defaults.graceSeconds = Self.graceSeconds
                $0.defaults.graceWhen = .connected
            }
        ) { bed in
            let module = try #require(bed.module)
            let key = try await bed.enableDevice(token: "token-grace-away", reads: true)
            let desktop = try await bed.client("alice", resource: "desktop")
            try await waitUntil("the desktop counts as available") {
                module.service.accountSessions.withLock { $0.isConnectedElsewhere("alice@localhost") }
            }
            let bob = try await bed.client("bob")
            for index in 1...2 {
                try bed.message(from: bob, to: "alice@localhost", body: "away \(index)", id: "away-\(index)")
            }
            try await waitUntil("bob's messages are held") { bed.statistic("coalesced.held") == 2 }
            // Past one grace, the desktop still available: the hold moved on, nothing went.
            try await Task.sleep(for: .seconds(Self.graceSeconds + 1))
            #expect(bed.appServer.pushes.isEmpty, "the phone got nothing while the desktop was available")

            try desktop.sendRaw("<presence><show>away</show></presence>")
            let push = try await bed.nextPush(key: key)
            #expect(push.summary["kind"] as? String == "message")
            #expect(push.summary["count"] as? Int == 2)
            #expect(push.summary["badge"] as? Int == 2)
            await bed.expectNoPush(within: .seconds(2))
            await desktop.close()
            await bob.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func aCallDuringGraceRingsAtOnce(on server: PushTestbed.Server) async throws {
        try await Self.withGrace(server) { bed in
            let key = try await bed.enableDevice(token: "token-grace-call", calls: "1", reads: true)
            let desktop = try await bed.client("alice", resource: "desktop")
            let bob = try await bed.client("bob", resource: "laptop")
            try await Self.desktopWrites(desktop, on: bed, reads: Self.inProcessReads(bed))
            try bed.message(from: bob, to: "alice@localhost", body: "are you there?", id: "call-1")
            try await waitUntil("bob's message is held") { bed.statistic("coalesced.held") == 1 }
            try bed.propose(from: bob, to: "alice@localhost", sid: "grace-call")
            // The call comes first, while the message is still held for the grace.
            let call = try await bed.nextPush(key: key)
            #expect(call.push.kind == "voip")
            let message = try await bed.nextPush(key: key)
            #expect(message.summary["kind"] as? String == "message")
            #expect(message.summary["count"] as? Int == 1)
            await desktop.close()
            await bob.close()
        }
    }

    /// The component is killed (SIGKILL) while bob's messages wait for the grace: the new process knows
    /// nothing of alice's desktop (it fails open), and the stored window sends the push once.
    @Test(.leftToThePlainRun, arguments: PushTestbed.bridgedServers)
    func afterAKillDuringGraceThePushStillComesOnce(on server: PushTestbed.Server) async throws {
        try await Self.withGrace(server, placement: .process, http: .init()) { bed in
            let port = try #require(bed.httpPort)
            let reads: () async -> Int64 = {
                guard let page = try? await HTTPTestClient.request("/metrics", port: port).body else { return 0 }
                return Int64(OperationsEndToEndTests.value(#"apush_events_total{kind="read"}"#, in: page) ?? 0)
            }
            let key = try await bed.enableDevice(token: "token-grace-kill", reads: true)
            let desktop = try await bed.client("alice", resource: "desktop")
            let bob = try await bed.client("bob")
            try await Self.desktopWrites(desktop, on: bed, reads: reads)
            for index in 1...2 {
                try bed.message(from: bob, to: "alice@localhost", body: "kill \(index)", id: "kill-\(index)")
            }
            let store = try await bed.openStore()
            try await waitUntil("bob's messages are held in the store") {
                guard
                    let registration = try await store.registration(
                        domain: "localhost", token: "token-grace-kill", account: "alice@localhost")
                else { return false }
                let chat = try await store.chats(registrationID: registration.id).first { $0.chat == "bob@localhost" }
                return chat?.count == 2 && chat?.held != nil
            }
            #expect(bed.appServer.pushes.isEmpty)

            await bed.stopComponent()  // SIGKILL
            try await bed.startComponent(.process)
            let push = try await bed.nextPush(key: key)
            #expect(push.summary["count"] as? Int == 2)
            await bed.expectNoPush(within: .seconds(2))
            #expect(bed.appServer.pushes.count == 1)
            await desktop.close()
            await bob.close()
        }
    }
}
