import Foundation
import Sealing
import Store
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

/// Issue 4 end to end: a real client, through a real Prosody (and, where the scenario needs a bridged
/// server, through ejabberd with its bridge too), lists and runs the commands and sees their effect on
/// the next push; the access rules hold on every stage.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CommandsEndToEndTests {
    static let component = PushTestbed.componentJID
    static let userNodes = ["registrations", "policy", "test"].map { "urn:xmpp:apush:0#" + $0 }
    static let adminNodes = [
        "admin-registrations", "admin-remove", "admin-policy", "admin-stats", "admin-prune-accounts",
    ]
    .map { "urn:xmpp:apush:0#" + $0 }

    @Test func usersSeeTheirCommandsAndOperatorsSeeAll() async throws {
        try await PushTestbed.with(.prosodyBridged) { bed in
            let alice = try await bed.client("alice")
            let carol = try await bed.client("carol")
            let forUser = try await alice.discoItems(of: Self.component, node: Namespace.commands).items.compactMap(
                \.node)
            let forAdmin = try await carol.discoItems(of: Self.component, node: Namespace.commands).items.compactMap(
                \.node)
            #expect(Set(forUser) == Set(Self.userNodes))
            #expect(Set(forAdmin) == Set(Self.userNodes + Self.adminNodes))
            await alice.close()
            await carol.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func mutingAChatSilencesItsNextMessageAndUnmutingBringsItBackWithTheCount(on server: PushTestbed.Server)
        async throws
    {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-policy")
            let alice = try await bed.client("alice", resource: "settings")
            try await submitPolicy(alice, ["muted": ["Bob@LocalHost"]])
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "muted 1")
            await bed.expectNoPush(within: .seconds(2))
            try await submitPolicy(alice, ["muted": []])
            try bed.message(from: bob, to: "alice@localhost", body: "unmuted")
            let push = try await bed.nextPush(key: key)
            #expect(push.summary["count"] as? Int == 2, "a silenced message still counts")
            await alice.close()
            await bob.close()
        }
    }

    @Test func hidingTheSenderTakesEffectOnTheNextPush() async throws {
        try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-hidden")
            let alice = try await bed.client("alice", resource: "settings")
            try await submitPolicy(alice, ["sender": ["hidden"]])
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "who am I")
            let push = try await bed.nextPush(key: key)
            #expect(push.summary["from"] == nil)
            #expect(push.summary["chat"] as? String == "")
            #expect(push.summary["count"] as? Int == 1)
            await alice.close()
            await bob.close()
        }
    }

    @Test func theTestCommandSendsEachKindToTheRegistrationsThatTakeIt() async throws {
        try await PushTestbed.with(.prosodyBridged) { bed in
            let phone = try await bed.enableDevice(token: "token-test-fcm", resource: "phone", reads: true)
            let pushKit = try await bed.enableDevice(token: "token-test-voip", resource: "pushkit", calls: "only")
            let alice = try await bed.client("alice", resource: "settings")
            for (kind, expectedNode, key, apushKind) in [
                ("message", "token-test-fcm", phone, nil), ("call", "token-test-voip", pushKit, "voip"),
                ("read", "token-test-fcm", phone, "read"), ("wake", "token-test-fcm", phone, "wake"),
            ] as [(String, String, KeyPair, String?)] {
                let result = try await run(alice, "urn:xmpp:apush:0#test", ["kind": [kind]])
                #expect(result.findString("@status") == "completed")
                let push = try await bed.nextPush(key: key)
                #expect(push.push.node == expectedNode)
                #expect(push.push.kind == apushKind)
                #expect(push.summary["test"] as? Bool == true)
                if kind != "wake" { #expect(push.summary["chat"] as? String == Self.component) }
            }
            await bed.expectNoPush()
            await alice.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func usersListAndRemoveTheirOwnRegistrationsAndTheServerDropsIt(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            try await bed.enableDevice(token: "token-mine")
            try await bed.enableDevice("bob", token: "token-bobs")
            let alice = try await bed.client("alice", resource: "settings")
            let first = try await alice.executeCommand(on: Self.component, node: "urn:xmpp:apush:0#registrations")
            let form = try DataForm(element: try #require(first.findElement("{jabber:x:data}x")))
            let mine = Fingerprint.of("token-mine")
            #expect(form.field("remove")?.options.map(\.value) == [mine])
            let listing = String(describing: first.serialized())
            #expect(!listing.contains("token-mine") && !listing.contains(Fingerprint.of("token-bobs")))
            // Bob's fingerprint is not alice's to remove.
            await #expect(throws: StanzaError.self) {
                _ = try await alice.executeCommand(
                    on: Self.component, node: "urn:xmpp:apush:0#registrations",
                    action: .complete, after: first,
                    form: .submit(formType: nil, values: ["remove": Fingerprint.of("token-bobs")]))
            }
            let done = try await alice.executeCommand(
                on: Self.component, node: "urn:xmpp:apush:0#registrations",
                action: .complete, after: first,
                form: .submit(formType: nil, values: ["remove": mine]))
            #expect(done.findString("@status") == "completed")
            let store = try SQLitePushStore(.file(path: bed.storePath))
            #expect(try await store.registration(domain: "localhost", token: "token-mine") == nil)
            #expect(try await store.registration(domain: "localhost", token: "token-bobs") != nil)
            // The next publish for it is answered cancel, not taken as a new registration.
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "still there?")
            try await waitUntil("the server is told the token is gone") { bed.statistic("answers.tombstone") == 1 }
            #expect(try await store.registration(domain: "localhost", token: "token-mine") == nil)
            await bed.expectNoPush()
            await alice.close()
            await bob.close()
        }
    }

    @Test(arguments: PushTestbed.bridgedServers)
    func operatorsListShowRemoveSetPoliciesAndReadStatistics(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, coalesceSeconds: 0) { bed in
            let key = try await bed.enableDevice(token: "token-ops")
            try await bed.enableDevice("bob", token: "token-ops-bob")
            let carol = try await bed.client("carol", resource: "console")

            let list = try await run(carol, "urn:xmpp:apush:0#admin-registrations", ["account": ["alice@localhost"]])
            let table = try DataForm(element: try #require(list.findElement("{jabber:x:data}x")))
            #expect(table.items.count == 1)
            #expect(table.items.first?.first { $0.variable == "fingerprint" }?.value == Fingerprint.of("token-ops"))
            let shown = try await run(
                carol, "urn:xmpp:apush:0#admin-registrations", ["fingerprint": [Fingerprint.of("token-ops")]])
            let details = try DataForm(element: try #require(shown.findElement("{jabber:x:data}x")))
            #expect(details.value("account") == "alice@localhost")
            #expect(details.value("module") == "fcm-test")

            // An operator turns messages off for alice: her next message pushes nothing.
            let account = try await carol.executeCommand(on: Self.component, node: "urn:xmpp:apush:0#admin-policy")
            let policyStage = try await carol.executeCommand(
                on: Self.component, node: "urn:xmpp:apush:0#admin-policy", action: .next, after: account,
                form: .submit(formType: nil, values: ["account": "alice@localhost"]))
            #expect(policyStage.findString("{jabber:x:data}x/title#") == "Push policy of alice@localhost")
            #expect(policyStage.findString("@sessionid") == account.findString("@sessionid"), "one id per session")
            _ = try await carol.executeCommand(
                on: Self.component, node: "urn:xmpp:apush:0#admin-policy", action: .complete,
                after: policyStage,
                form: .submit(formType: "urn:xmpp:apush:policy:0", values: ["messages": "0"]))
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "policy says no")
            await bed.expectNoPush(within: .seconds(2))

            let removed = try await run(carol, "urn:xmpp:apush:0#admin-remove", ["account": ["bob@localhost"]])
            #expect(removed.findString("note#") == "Removed 1 registration(s).")

            let stats = try await carol.executeCommand(on: Self.component, node: "urn:xmpp:apush:0#admin-stats")
            #expect(stats.findString("@status") == "completed")
            let counters = try DataForm(element: try #require(stats.findElement("{jabber:x:data}x")))
            #expect(counters.value("registrations") == "1")
            #expect(counters.value("since-start.dropped.policy") == "1")
            #expect(counters.value("total.events.message") != nil)
            _ = key
            await carol.close()
            await bob.close()
        }
    }

    @Test func theAccessRulesHoldOnEveryStage() async throws {
        try await PushTestbed.with(.prosodyBridged) { bed in
            try await (bed.server as! ProsodyServer).register(
                user: "dave", password: "pw-dave",
                domain: PushTestbed.foreignDomain)
            let alice = try await bed.client("alice")
            let bob = try await bed.client("bob")
            let dave = try await bed.client("dave", domain: PushTestbed.foreignDomain)

            // An operator command as a user.
            await expectError(.forbidden) {
                _ = try await alice.executeCommand(on: Self.component, node: "urn:xmpp:apush:0#admin-stats")
            }
            // An account of a domain the component does not serve.
            await expectError(.forbidden) {
                _ = try await dave.executeCommand(on: Self.component, node: "urn:xmpp:apush:0#policy")
            }
            #expect(try await dave.discoItems(of: Self.component, node: Namespace.commands).items.isEmpty)
            // Another account's session, and a stale one.
            let started = try await alice.executeCommand(on: Self.component, node: "urn:xmpp:apush:0#policy")
            await expectError(.badRequest) {
                _ = try await bob.executeCommand(
                    on: Self.component, node: "urn:xmpp:apush:0#policy", action: .complete,
                    after: started, form: .submit(formType: nil, values: ["muted": "x@localhost"]))
            }
            await expectError(.badRequest) {
                _ = try await alice.executeCommand(
                    on: Self.component, node: "urn:xmpp:apush:0#policy", action: .complete,
                    sessionID: "no-such-session", form: .submit(formType: nil, values: [:]))
            }
            // Bad form values: named, and nothing applied.
            for (field, value) in [
                ("coalesce-seconds", "abc"), ("coalesce-seconds", "100000"), ("groupchat", "sometimes"),
                ("quiet-hours", "25:00-07:00"), ("timezone", "Mars/Olympus"), ("muted", "not a jid@@"),
                ("messages", "perhaps"),
            ] {
                let error = await expectError(.badRequest) {
                    _ = try await alice.executeCommand(
                        on: Self.component, node: "urn:xmpp:apush:0#policy",
                        action: .complete, after: started,
                        form: .submit(formType: nil, values: ["sender": "hidden", field: value]))
                }
                #expect(error?.text?.hasPrefix(field) == true, "the error names \(field): \(error?.text ?? "none")")
            }
            let store = try SQLitePushStore(.file(path: bed.storePath))
            #expect(try await store.policy(account: "alice@localhost") == nil, "a bad submit changed the policy")
            // An operator naming an account of a foreign domain.
            let carol = try await bed.client("carol")
            let adminStarted = try await carol.executeCommand(
                on: Self.component, node: "urn:xmpp:apush:0#admin-policy")
            await expectError(.badRequest) {
                _ = try await carol.executeCommand(
                    on: Self.component, node: "urn:xmpp:apush:0#admin-policy", action: .next,
                    after: adminStarted,
                    form: .submit(formType: nil, values: ["account": "dave@\(PushTestbed.foreignDomain)"]))
            }
            for client in [alice, bob, dave, carol] { await client.close() }
        }
    }

    // MARK: Helpers

    /// Runs a two-stage command: execute, then complete with `values`.
    private func run(_ client: C2SClient, _ node: String, _ values: [String: [String]]) async throws -> Element {
        let first = try await client.executeCommand(on: Self.component, node: node)
        let form = DataForm(type: .submit, fields: values.map { DataForm.Field(variable: $0.key, values: $0.value) })
        return try await client.executeCommand(
            on: Self.component, node: node, action: .complete, after: first, form: form)
    }

    private func submitPolicy(_ client: C2SClient, _ values: [String: [String]]) async throws {
        let done = try await run(client, "urn:xmpp:apush:0#policy", values)
        #expect(done.findString("@status") == "completed")
    }

    @discardableResult
    private func expectError(
        _ condition: StanzaError.Condition, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> Void
    ) async -> StanzaError? {
        do {
            try await body()
            Issue.record("expected \(condition), got a result", sourceLocation: sourceLocation)
        } catch let error as StanzaError {
            #expect(error.condition == condition, sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected \(condition), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }
}
