import LocalServers
import APush
import Foundation
import Logging
import SQLCore
import SQLite
import Sealing
import Store
import Testing
import XMLStream
import XMPP
import TestSupport

/// Issue 7, faults end to end, through a real Prosody with its bridge (and ejabberd with its bridge
/// where a scenario takes the server): an App Server that hangs, refuses or crawls, the server
/// restarting, the component away, the store full or read-only, and `kill -9` under load.
/// In every case nothing held is lost, nothing is sent twice beyond at-least-once (a duplicate only
/// when the process died between the App Server taking a push and the component recording it), and
/// no registration is lost. The scenarios are independent, so they run concurrently.
@Suite(.timeLimit(.minutes(4)))
struct FaultsEndToEndTests {
    @Test func anAppServerSilentForAWhileGetsEveryHeldPushAndRetryOnceWhenItIsBack() async throws {
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: 2,
            configure: {
                $0.upstreamTimeoutSeconds = 2
                $0.retryMessageSeconds = 300
            }
        ) { bed in
            let aliceKey = try await bed.enableDevice("alice", token: "token-silent-a")
            let bobKey = try await bed.enableDevice("bob", token: "token-silent-b")
            bed.appServer.scriptEveryNode(answer: .silence)
            let carol = try await bed.client("carol")
            for index in 1...3 {
                try bed.message(from: carol, to: "alice@localhost", body: "silent \(index)")
            }
            try bed.message(from: carol, to: "bob@localhost", body: "silent for bob")
            // Both first pushes and the held one were tried, and timed out: each is stored for retry.
            try await waitUntil("three pushes wait for a retry", timeout: .seconds(30)) {
                bed.statistic("pushes.message.retrying") >= 3
            }
            // Meanwhile nothing else stalls: the server's publishes and a command are answered.
            let answered = bed.serverPublishesAnswered
            try bed.message(from: carol, to: "alice@localhost", body: "silent 4")
            try await waitUntil("the server's publish is answered") { bed.serverPublishesAnswered > answered }
            let stats = try await carol.executeCommand(
                on: PushTestbed.componentJID, node: "urn:xmpp:apush:0#admin-stats")
            #expect(stats.name == "command")
            try await Task.sleep(for: .seconds(10))  // still silent, past several attempts

            bed.appServer.scriptEveryNode(answer: .result)
            try await waitUntil("alice's latest count and bob's message are taken", timeout: .seconds(60)) {
                try bed.takenCounts(node: "token-silent-a", key: aliceKey).contains(4)
                    && bed.takenCounts(node: "token-silent-b", key: bobKey) == [1]
            }
            try await waitUntil("no retry is left") {
                try await SQLitePushStore(.file(path: bed.storePath)).nextRetry() == nil
            }
            // The stored pushes of counts 1 and 3 gave way to the newer one: the device ends on 4.
            #expect(try bed.takenCounts(node: "token-silent-a", key: aliceKey).last == 4)
            try bed.expectEachTakenOnce(node: "token-silent-a", key: aliceKey)
            try bed.expectEachTakenOnce(node: "token-silent-b", key: bobKey)
            try await bed.expectRegistrations(["token-silent-a", "token-silent-b"])
            await carol.close()
        }
    }

    /// Every `cancel` an App Server can answer, each on its own registration (docs/wire-contract.md, Coalescing, reads,
    /// calls, answers). Prosody
    /// is told to drop a registration at its first error that is not `wait`, so its copy shows the
    /// component's answer too.
    static let refusals: [String: StanzaError.Condition?] = [
        "token-item-not-found": .itemNotFound, "token-gone": .gone, "token-forbidden": .forbidden,
        "token-not-allowed": .notAllowed, "token-not-authorized": .notAuthorized,
        "token-service-unavailable": .serviceUnavailable, "token-internal-server-error": .internalServerError,
        "token-no-condition": nil,
    ]
    static let deadTokens: Set<String> = ["token-item-not-found", "token-gone"]

    @Test func onlyItemNotFoundAndGoneRemoveARegistrationEveryOtherCancelKeepsIt() async throws {
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: 0, serverHostConfig: "    push_max_errors = 1",
            configure: { $0.retryMessageSeconds = 120 }
        ) { bed in
            var devices: [String: KeyPair] = [:]
            for (index, (token, condition)) in Self.refusals.sorted(by: { $0.key < $1.key }).enumerated() {
                let user = index % 2 == 0 ? "alice" : "bob"
                devices[token] = try await bed.enableDevice(user, token: token, resource: "device-\(index)")
                bed.appServer.script(node: token, answer: .error(.cancel, condition))
            }
            let keys = devices
            let carol = try await bed.client("carol")
            try bed.message(from: carol, to: "alice@localhost", body: "refused 1")
            try bed.message(from: carol, to: "bob@localhost", body: "refused 1")
            try await waitUntil("every registration was pushed to once") {
                Set(bed.appServer.pushes.map(\.node)) == Set(Self.refusals.keys)
            }
            try await waitUntil("the server's eight publishes are answered") { bed.serverPublishesAnswered >= 8 }
            #expect(bed.statistic("answers.cancel") == 2, "only the two dead tokens are answered cancel")
            let kept = Set(Self.refusals.keys).subtracting(Self.deadTokens)
            try await bed.expectRegistrations(kept, absent: Self.deadTokens)

            // The App Server is fixed: the refused pushes go out again, and the next message reaches
            // every kept registration, which the server kept too; the dead ones get nothing more.
            bed.appServer.scriptEveryNode(answer: .result)
            try await waitUntil("every refused push went out again", timeout: .seconds(30)) {
                try kept.allSatisfy { try bed.takenCounts(node: $0, key: keys[$0]!).contains(1) }
            }
            try bed.message(from: carol, to: "alice@localhost", body: "refused 2")
            try bed.message(from: carol, to: "bob@localhost", body: "refused 2")
            try await waitUntil("every kept registration has the second message", timeout: .seconds(30)) {
                try kept.allSatisfy { try bed.takenCounts(node: $0, key: keys[$0]!).contains(2) }
            }
            try await Task.sleep(for: .seconds(3))
            for token in kept {
                let counts = try bed.takenCounts(node: token, key: keys[token]!)
                #expect(counts.contains(1), "the refused push for \(token) was retried")
                try bed.expectEachTakenOnce(node: token, key: keys[token]!)
            }
            for token in Self.deadTokens {
                #expect(bed.appServer.pushes.filter { $0.node == token }.count == 1, "\(token) was pushed again")
            }
            #expect(bed.statistic("answers.tombstone") == 0, "Prosody kept a dead token")
            try await bed.expectRegistrations(kept, absent: Self.deadTokens)
            await carol.close()
        }
    }

    @Test func anAppServerTakingFiveSecondsPerAnswerUnderLoadDelaysNothingElse() async throws {
        try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 2) { bed in
            var devices: [String: KeyPair] = [:]
            for index in 0..<8 {
                let user = index < 4 ? "alice" : "bob"
                devices["token-slow-\(index)"] = try await bed.enableDevice(
                    user, token: "token-slow-\(index)",
                    resource: "device-\(index)", calls: "1")
            }
            bed.appServer.delayAnswers(by: .seconds(5))
            let keys = devices
            let carol = try await bed.client("carol")
            let started = ContinuousClock.now
            for index in 1...4 {
                try bed.message(from: carol, to: "alice@localhost", body: "slow \(index)")
                try bed.message(from: carol, to: "bob@localhost", body: "slow \(index)")
            }
            for index in 1...10 {
                try bed.propose(from: carol, to: "alice@localhost", sid: "slow-call-\(index)")
            }
            // Eight windows end together: each held push is sent while the others wait for their answer,
            // not one after another (that would take 8 × 5 s).
            try await waitUntil("every registration has its burst's latest count", timeout: .seconds(60)) {
                try keys.allSatisfy { try bed.takenCounts(node: $0.key, key: $0.value).contains(4) }
            }
            let drained = ContinuousClock.now - started
            #expect(
                drained < .seconds(25),
                "the held pushes took \(drained): background work waited for one answer at a time")
            try await waitUntil("every call reached alice's four devices", timeout: .seconds(30)) {
                bed.appServer.taken.filter { $0.kind == "voip" }.count == 40
            }
            for (token, key) in keys { try bed.expectEachTakenOnce(node: token, key: key) }
            try await bed.expectRegistrations(Set(keys.keys))
            await carol.close()
        }
    }

    /// ejabberd keeps its registrations in Mnesia, Prosody in its data directory: both come back.
    @Test(arguments: PushTestbed.bridgedServers)
    func theServerRestartingDuringABurstLosesNeitherTheHeldPushNorTheRegistration(on server: PushTestbed.Server)
        async throws
    {
        try await PushTestbed.with(server, coalesceSeconds: 4) { bed in
            let key = try await bed.enableDevice(token: "token-restart")
            let bob = try await bed.client("bob")
            for index in 1...5 {
                try bed.message(from: bob, to: "alice@localhost", body: "restart \(index)")
            }
            _ = try await bed.nextPush(key: key)
            try await waitUntil("all five are stored") {
                try await bed.storedChat(token: "token-restart", chat: "bob@localhost")?.count == 5
            }
            try await bed.restartServer()
            try await waitUntil("the held push is taken after the restart", timeout: .seconds(40)) {
                try bed.takenCounts(node: "token-restart", key: key).contains(5)
            }
            let again = try await bed.client("bob", resource: "again")
            try bed.message(from: again, to: "alice@localhost", body: "after the restart")
            try await waitUntil("both sides kept the registration") {
                try bed.takenCounts(node: "token-restart", key: key).contains(6)
            }
            try bed.expectEachTakenOnce(node: "token-restart", key: key)
            try await bed.expectRegistrations(["token-restart"])
            await again.close()
        }
    }

    @Test func theServerRestartingDuringACommandLeavesTheComponentWorking() async throws {
        try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-command")
            let alice = try await bed.client("alice", resource: "settings")
            let node = "urn:xmpp:apush:0#policy"
            let first = try await alice.executeCommand(on: PushTestbed.componentJID, node: node)
            // A second stage in flight when the server goes down: its answer is lost with the stream.
            let form = DataForm(type: .submit, fields: [DataForm.Field(variable: "muted", values: ["bob@localhost"])])
            async let lost: Element? = try? alice.executeCommand(
                on: PushTestbed.componentJID, node: node, action: .complete,
                after: first, form: form)
            try await bed.restartServer()
            _ = await lost
            await alice.close()

            // The component is still there and its state whole: a fresh command runs to the end, and
            // the registration still gets pushes (the mute, if it was taken, silences bob only).
            let again = try await bed.client("alice", resource: "settings")
            let fresh = try await again.executeCommand(on: PushTestbed.componentJID, node: node)
            let unmute = DataForm(type: .submit, fields: [DataForm.Field(variable: "muted", values: [])])
            let done = try await again.executeCommand(
                on: PushTestbed.componentJID, node: node, action: .complete,
                after: fresh, form: unmute)
            #expect(done.findString("@status") == "completed")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "after the command")
            let push = try await bed.nextPush(key: key)
            #expect(push.summary["chat"] as? String == "bob@localhost")
            try await bed.expectRegistrations(["token-command"])
            await again.close()
            await bob.close()
        }
    }

    @Test(.leftToThePlainRun, arguments: PushTestbed.bridgedServers)
    func aBurstSurvivesKillDashNineOfTheComponent(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 8, placement: .process) { bed in
            let key = try await bed.enableDevice(token: "token-kill")
            let bob = try await bed.client("bob")
            for index in 1...5 {
                try bed.message(from: bob, to: "alice@localhost", body: "kill \(index)")
            }
            let first = try await bed.nextPush(key: key)
            #expect(first.summary["count"] as? Int == 1)
            let store = try SQLitePushStore(.file(path: bed.storePath))
            try await waitUntil("all five are stored") {
                guard let registration = try await store.registration(domain: "localhost", token: "token-kill") else {
                    return false
                }
                return try await store.chats(registrationID: registration.id).first?.count == 5
            }
            await bed.stopComponent()  // SIGKILL, in the middle of the window
            try await bed.startComponent(.process)
            let second = try await bed.nextPush(key: key, timeout: .seconds(15))
            #expect(second.summary["count"] as? Int == 5)
            await bed.expectNoPush(within: .seconds(5))
            await bob.close()
        }
    }

    /// The component away while messages arrive must cost no registration on the server: Prosody counts
    /// the bounce as one of its `push_max_errors`, and ejabberd's mod_push (23.01 and 24.12), which deletes a
    /// registration on `remote-server-not-found`, gets no answer at all from the bridge (a timeout it
    /// ignores). So when the component is back, the next message reaches every device.
    @Test(arguments: PushTestbed.bridgedServers)
    func theComponentAwayAndBackCostsNoRegistration(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let keys = [
                "token-away-alice": try await bed.enableDevice("alice", token: "token-away-alice"),
                "token-away-bob": try await bed.enableDevice("bob", token: "token-away-bob"),
            ]
            let carol = try await bed.client("carol")
            await bed.stopComponent()
            for user in ["alice", "bob"] {
                try bed.message(from: carol, to: "\(user)@localhost", body: "while the component is away")
            }
            try await Task.sleep(for: .seconds(2))  // the server has tried to publish both by now
            try await bed.startComponent(.inProcess)
            for user in ["alice", "bob"] {
                try bed.message(from: carol, to: "\(user)@localhost", body: "the component is back")
            }
            try await waitUntil("both devices have a push") {
                Set(bed.appServer.pushes.map(\.node)) == Set(keys.keys)
            }
            for push in bed.appServer.pushes {
                let summary = try await bed.open(push, key: try #require(keys[push.node]))
                #expect(summary["chat"] as? String == "carol@localhost")
            }
            try await bed.expectRegistrations(Set(keys.keys))
            await carol.close()
        }
    }

    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aFullStoreAnswersWaitAndRecoversWhenSpaceReturns() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 3, storeDirectory: mount.directory) { bed in
            let key = try await bed.enableDevice(token: "token-full")
            let bob = try await bed.client("bob")
            for index in 1...3 {
                try bed.message(from: bob, to: "alice@localhost", body: "full \(index)")
            }
            _ = try await bed.nextPush(key: key)
            try await waitUntil("all three are stored") {
                try await bed.storedChat(token: "token-full", chat: "bob@localhost")?.count == 3
            }
            try mount.fill()
            let carol = try await bed.client("carol")
            let waited = bed.statistic("answers.wait")
            try bed.message(from: carol, to: "alice@localhost", body: "no room")
            try await waitUntil("the publish is answered wait") { bed.statistic("answers.wait") > waited }
            #expect(bed.logSink.text.contains("full"), "the log names the cause")
            let failuresBefore = bed.logSink.text.components(separatedBy: "stored push work failed").count
            try await Task.sleep(for: .seconds(4))  // the window ends while the store is full
            try await bed.waitUntilRouted()  // still running
            let failures = bed.logSink.text.components(separatedBy: "stored push work failed").count - failuresBefore
            #expect(
                failures <= 1, "the background loop logged a failing store \(failures) times in 4 s, not once a minute")

            mount.emptyFiller()
            try await waitUntil("the held push goes out once there is room", timeout: .seconds(20)) {
                try bed.takenCounts(node: "token-full", key: key).contains(3)
            }
            try bed.message(from: carol, to: "alice@localhost", body: "room again")
            try await waitUntil("a new message is pushed") {
                bed.appServer.taken.count >= 3
            }
            try bed.expectEachTakenOnce(node: "token-full", key: key)
            try await bed.expectRegistrations(["token-full"])
            await bob.close()
            await carol.close()
        }
    }

    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aReadOnlyStoreAnswersWaitAndRecoversWhenItIsWritableAgain() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: 0, placement: .process,
            storeDirectory: mount.directory
        ) { bed in
            let key = try await bed.enableDevice(token: "token-readonly")
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "before")
            _ = try await bed.nextPush(key: key)
            // The kernel refuses to make a file system read-only while a file on it is open for
            // writing, so the store turns read-only under a component killed and started again, as
            // after a disk error and a restart by the supervisor. Its WAL is left behind, as then.
            await bed.stopComponent()
            try mount.setReadOnly(true)
            try await bed.startComponent(.process)
            try bed.message(from: bob, to: "alice@localhost", body: "read only")
            try await waitUntil("the publish is answered wait") {
                bed.componentLog.contains("a publish failed") || bed.componentLog.contains("answering wait")
            }
            #expect(bed.componentLog.lowercased().contains("readonly"), "the log names the cause")

            try mount.setReadOnly(false)
            // The store is tried again on use, at most every 2 s: a publish sooner is still answered wait.
            try await Task.sleep(for: .seconds(2))
            try bed.message(from: bob, to: "alice@localhost", body: "writable again")
            let push = try await bed.nextPush(key: key, timeout: .seconds(20))
            #expect(push.summary["chat"] as? String == "bob@localhost")
            try await bed.expectRegistrations(["token-readonly"])
            await bob.close()
        }
    }

    /// Many chats, an App Server that takes a second per answer (so a kill often lands while a push
    /// awaits its answer), the component killed three times at random moments, and once more while
    /// pushes await an answer.
    @Test(.leftToThePlainRun) func killDashNineAtRandomMomentsOfALoadRunLosesNothing() async throws {
        // A push in flight at a kill comes back when its lease ends (the upstream timeout and 5 s), well
        // within its retry deadline.
        try await PushTestbed.with(
            .prosodyBridged, coalesceSeconds: 2, placement: .process,
            configure: {
                $0.upstreamTimeoutSeconds = 5
                $0.retryMessageSeconds = 120
            }
        ) { bed in
            var devices: [String: KeyPair] = [:]
            for (index, user) in ["alice", "alice", "bob", "bob"].enumerated() {
                devices["token-load-\(index)"] = try await bed.enableDevice(
                    user, token: "token-load-\(index)",
                    resource: "device-\(index)")
            }
            let keys = devices
            var senders = [try await bed.client("carol")]
            for index in 1...4 {
                try await bed.server.register(user: "sender\(index)", password: "pw-sender\(index)")
                senders.append(try await bed.client("sender\(index)"))
            }
            let clients = senders
            bed.appServer.delayAnswers(by: .seconds(1))
            let load = Task {
                for index in 1...90 {
                    try bed.message(
                        from: clients[index % clients.count],
                        to: index % 2 == 0 ? "alice@localhost" : "bob@localhost",
                        body: "load \(index)", id: "load-\(index)")
                    try await Task.sleep(for: .milliseconds(150))
                }
            }
            // Where the App Server's log stood at each restart: a push taken twice is allowed only across
            // one. Counted once the process is dead, not before the kill: what it wrote just before may
            // still reach the App Server through Prosody after it died, and is sent again after the restart.
            var killedAt: [Int] = []
            for _ in 1...3 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 1000...3500)))
                await bed.stopComponent()
                killedAt.append(bed.appServer.taken.count)
                try await bed.startComponent(.process)
            }
            try await load.value
            // A last kill while pushes await an answer the App Server never gives (so it never took
            // them): whatever the component had accepted must still go out after the restart.
            // A message to each account after the silence begins, so a push awaits its answer even when
            // the load's last bursts all went out before it (a slow restart can outlast the load).
            bed.appServer.scriptEveryNode(answer: .silence)
            let heard = bed.appServer.pushes.count
            for (index, account) in ["alice@localhost", "bob@localhost"].enumerated() {
                try bed.message(from: clients[index], to: account, body: "after the load", id: "last-\(index)")
            }
            try await waitUntil("a push awaits its answer", timeout: .seconds(60)) {
                bed.appServer.pushes.count > heard
            }
            await bed.stopComponent()
            killedAt.append(bed.appServer.taken.count)
            bed.appServer.scriptEveryNode(answer: .result)
            try await bed.startComponent(.process)
            // A liveness bound past the retry deadline (120 s), which is what a lost push would run
            // into: under a loaded run a restarted process takes its time, and a push whose answer
            // came late is retried on its backoff (a run here still held one after 90 s).
            try? await waitUntil("every chat's latest count went out", timeout: .seconds(150)) {
                try await bed.undelivered(keys).isEmpty
            }
            let undelivered = try await bed.undelivered(keys)
            #expect(
                undelivered.isEmpty,
                "accepted, never delivered: \(undelivered)\nThe component's log:\n\(bed.componentLog.suffix(8000))")
            for (token, key) in keys { try bed.expectEachTakenOnce(node: token, key: key, exceptAcross: killedAt) }
            try await bed.expectRegistrations(Set(keys.keys))
            for client in clients { await client.close() }
        }
    }
}

// MARK: What every fault must leave true

extension PushTestbed {
    /// The plaintexts of the pushes the App Server took for `node`, in the order it took them, with
    /// their index in its log.
    func taken(node: String, key: KeyPair) throws -> [(index: Int, json: String)] {
        try appServer.taken.enumerated().filter { $0.element.node == node }.map { index, push in
            let plaintext = try Envelope.open(push.envelope, privateKey: key.privateKey)
            return (index, String(decoding: plaintext, as: UTF8.self).trimmingCharacters(in: .whitespaces))
        }
    }

    /// The counts of the message pushes taken for `node`, in order.
    func takenCounts(node: String, key: KeyPair) throws -> [Int] {
        try taken(node: node, key: key).compactMap { _, json in
            let summary = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            return summary?["kind"] as? String == "message" ? summary?["count"] as? Int : nil
        }
    }

    /// No push reached the device twice (each attempt is sealed afresh, but the summary is the same),
    /// except one taken on both sides of a kill at an index in `kills` (at-least-once).
    func expectEachTakenOnce(
        node: String, key: KeyPair, exceptAcross kills: [Int] = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var seen: [String: Int] = [:]
        for (index, json) in try taken(node: node, key: key) {
            if let earlier = seen[json], !kills.contains(where: { earlier < $0 && $0 <= index }) {
                Issue.record("a push for \(node) was taken twice: \(json)", sourceLocation: sourceLocation)
            }
            seen[json] = index
        }
    }

    /// The component's stored registration for `token`, read through its own store.
    func storedRegistration(token: String) async throws -> Registration? {
        try await SQLitePushStore(.file(path: storePath))
            .registrations(matching: RegistrationFilter(), limit: 1000, offset: 0).first { $0.token == token }
    }

    func storedChat(token: String, chat: String) async throws -> ChatState? {
        guard let registration = try await storedRegistration(token: token) else { return nil }
        return try await SQLitePushStore(.file(path: storePath)).chats(registrationID: registration.id)
            .first { $0.chat == chat }
    }

    /// Every token in `present` still has its registration, and none in `absent` has one.
    func expectRegistrations(
        _ present: Set<String>, absent: Set<String> = [],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let stored = Set(
            try await SQLitePushStore(.file(path: storePath))
                .registrations(matching: RegistrationFilter(), limit: 1000, offset: 0).map(\.token))
        #expect(
            present.subtracting(stored).isEmpty, "registrations lost: \(present.subtracting(stored).sorted())",
            sourceLocation: sourceLocation)
        #expect(
            absent.intersection(stored).isEmpty, "dead registrations kept: \(absent.intersection(stored).sorted())",
            sourceLocation: sourceLocation)
    }

    /// The server's publishes the component answered so far, whatever the answer.
    var serverPublishesAnswered: Int64 {
        statistic("answers.result") + statistic("answers.wait") + statistic("answers.cancel")
    }

    /// What the component accepted and the device never got: a chat with a held push or a stored
    /// retry, or whose highest count pushed is below the count stored (counts only grow between
    /// reads, so a late retry of an older one may come after a newer one). Empty when all went out.
    func undelivered(_ keys: [String: KeyPair]) async throws -> [String] {
        let store = try SQLitePushStore(.file(path: storePath))
        var missing: [String] = []
        // Each item left in the outbox, with what says why it is still there.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for row in try Database(.file(path: storePath)).query(
            "SELECT kind, attempts, next_at, deadline, registration_id FROM retries")
        {
            let (due, deadline) = (try row.decode("next_at", \.int64Value), try row.decode("deadline", \.int64Value))
            missing.append(
                "a \(try row.decode("kind", \.stringValue)) retry of registration "
                    + "\(try row.decode("registration_id", \.int64Value)) after "
                    + "\(try row.decode("attempts", \.int64Value)) attempts, due in \(due - now) ms, "
                    + "deadline in \(deadline - now) ms")
        }
        for (token, key) in keys.sorted(by: { $0.key < $1.key }) {
            guard let registration = try await storedRegistration(token: token) else {
                missing.append("\(token): no registration")
                continue
            }
            for chat in try await store.chats(registrationID: registration.id) where chat.count > 0 {
                let counts = try taken(node: token, key: key).compactMap { _, json -> Int? in
                    let summary = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
                    return summary?["chat"] as? String == chat.chat ? summary?["count"] as? Int : nil
                }
                if chat.held != nil || counts.max() != chat.count {
                    missing.append(
                        "\(token) \(chat.chat): stored \(chat.count)\(chat.held == nil ? "" : " held"), pushed \(counts)"
                    )
                }
            }
        }
        return missing
    }
}
