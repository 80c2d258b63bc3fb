import ComponentHost
import Foundation
import Logging
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

@testable import APush

/// Issue 20 item 6 end to end: `#admin-prune-accounts` run by an operator through the server, the
/// component asking that server which accounts exist and removing the registrations of those that do
/// not. Against the stand-in server, which answers the accounts query as the bridges do
/// (docs/wire-contract.md).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PruneEndToEndTests {
    static let carol = try! JID("carol@localhost/desk")
    static let node = "urn:xmpp:apush:0#admin-prune-accounts"

    /// The component as the host runs it, on a stand-in server and an in-memory store.
    struct Bed {
        let server: StandInComponentServer
        let store: SQLitePushStore
        let running: Task<Void, Never>

        init(answerTimeoutSeconds: Int = 10) async throws {
            server = try StandInComponentServer(componentJID: "apush.localhost", secret: "prune-secret")
            store = try SQLitePushStore(.memory)
            var settings = APushSettings()
            settings.appServer = "push.localhost"
            settings.upstreamTimeoutSeconds = answerTimeoutSeconds
            let module = try APushModule(store: store, settings: settings, logger: .disabled)
            let configuration = try Configuration.load(
                file: nil,
                environment: [
                    "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "prune-secret",
                    "APUSH_DOMAINS": "localhost", "APUSH_SERVER": "127.0.0.1:\(server.port)",
                    "APUSH_APP_SERVER": "push.localhost", "APUSH_ADMINS": "carol@localhost",
                ], schema: .apushComponent)
            let service = try ComponentService(configuration: configuration, modules: [module], logger: .disabled)
            running = Task { await service.run() }
            try await server.waitForConnection()
        }

        func register(_ token: String, account: String) async throws {
            _ = try await store.register(
                RegistrationRequest(
                    domain: "localhost", token: token, pushModule: "fcm", account: account,
                    deviceKey: Array(repeating: 7, count: 32), calls: .none, wantsReads: false),
                freshCollapseKey: Array(repeating: 3, count: 32), now: 1_000)
        }

        func tokens() async throws -> Set<String> {
            Set(try await store.registrations(matching: RegistrationFilter(), limit: 100, offset: 0).map(\.token))
        }

        /// One stage of the command, as carol's client sends it through the server.
        func command(action: AdHocAction = .execute, after previous: Element? = nil, _ values: [String: String] = [:])
            async throws -> Element
        {
            var command = Element(
                "command", namespace: Namespace.commands,
                [
                    "node": PruneEndToEndTests.node, "action": action.rawValue,
                    "sessionid": previous?[attribute: "sessionid"],
                ])
            let fields = values.map { DataForm.Field(variable: $0.key, values: [$0.value]) }
            if let previous {
                command.append(DataForm(type: .submit, fields: fields + previous.hiddenFormFields).element)
            }
            let answer = try await server.request(
                .iq(
                    type: .set, id: UUID().uuidString, from: PruneEndToEndTests.carol, to: try JID("apush.localhost"),
                    payload: command))
            #expect(answer.iqType == .result, "\(answer.serialized())")
            return try #require(answer.child("command", namespace: Namespace.commands))
        }

        func stop() async {
            running.cancel()
            await running.value
            server.stop()
        }
    }

    /// The account lists the component asked about, in order.
    final class Asked: Sendable {
        private let lists = Mutex<[[String]]>([])
        func append(_ list: [String]) { lists.withLock { $0.append(list) } }
        var all: [[String]] { lists.withLock { $0 } }
    }

    /// The server's answers to the accounts query: `gone` do not exist; nil answers nothing.
    static func answerAccounts(on server: StandInComponentServer, gone: Set<String>?, asked: Asked) {
        server.answerRequests { stanza in
            guard let accounts = stanza.child("accounts", namespace: "urn:xmpp:apush:bridge:0") else { return nil }
            let jids = accounts.elements.compactMap { $0[attribute: "jid"] }
            asked.append(jids)
            guard let gone else { return nil }
            let answer = Element(
                "accounts", namespace: "urn:xmpp:apush:bridge:0", [:],
                children: jids.map {
                    Element(
                        "account", namespace: "urn:xmpp:apush:bridge:0",
                        ["jid": $0, "exists": gone.contains($0) ? "false" : "true"])
                })
            return stanza.resultReply(payload: answer)
        }
    }

    @Test func theRegistrationsOfAccountsTheServerNoLongerHasArePrunedOnceConfirmed() async throws {
        let bed = try await Bed()
        try await bed.register("alice-phone", account: "alice@localhost")
        try await bed.register("gone-phone", account: "gone@localhost")
        try await bed.register("gone-tablet", account: "gone@localhost")
        let asked = Asked()
        Self.answerAccounts(on: bed.server, gone: ["gone@localhost"], asked: asked)

        let first = try await bed.command()
        let check = try await bed.command(action: .next, after: first, ["domain": "localhost"])
        #expect(check[attribute: "status"] == "executing")
        let form = try DataForm(element: try #require(check.child("x", namespace: Namespace.dataForms)))
        #expect(form.fields.first { $0.type == .fixed }?.value?.hasPrefix("2 registration(s) of 1 of the 2") == true)
        #expect(try await bed.tokens() == ["alice-phone", "gone-phone", "gone-tablet"])
        #expect(asked.all == [["alice@localhost", "gone@localhost"]])

        let done = try await bed.command(action: .complete, after: check, ["confirm": "1"])
        #expect(done[attribute: "status"] == "completed")
        #expect(
            done.findString("{\(Namespace.commands)}note#")
                == "Removed 2 registration(s) of 1 account(s) of localhost that no longer exist.")
        #expect(try await bed.tokens() == ["alice-phone"])
        await bed.stop()
    }

    @Test func aServerThatDoesNotAnswerLosesNothing() async throws {
        let bed = try await Bed(answerTimeoutSeconds: 1)
        try await bed.register("gone-phone", account: "gone@localhost")
        let asked = Asked()
        // The stand-in never answers: the query times out (after the App Server's timeout).
        Self.answerAccounts(on: bed.server, gone: nil, asked: asked)
        let first = try await bed.command()
        let check = try await bed.command(action: .next, after: first, ["domain": "localhost"])
        #expect(check[attribute: "status"] == "completed")
        #expect(check.elements.filter { $0.name == "note" }.map(\.text).contains { $0.contains("kept") })
        #expect(try await bed.tokens() == ["gone-phone"])
        #expect(asked.all.count == 1)
        await bed.stop()
    }

    /// On a real Prosody with its bridge: an account deleted through the server takes its
    /// registrations with it (the bridge reports it), and one deleted behind the server's back (its
    /// file removed from the store) is pruned by the operator's command, which asks the bridge; the
    /// other accounts' registrations stay. On 0.12 and 13.0.
    @Test(arguments: [PushTestbed.Server.prosodyBridged, .prosody13Bridged])
    func onProsodyADeletedAccountLeavesNoRegistrationBehind(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server, prosodyModules: ["register"]) { bed in
            guard let prosody = bed.server as? ProsodyServer else { throw CancellationError() }
            for user in ["leaver", "vanished"] {
                try await bed.server.register(user: user, password: "pw-\(user)")
            }
            for user in ["alice", "leaver", "vanished"] {
                try await bed.enableDevice(user, token: "token-\(user)")
            }
            let store = try SQLitePushStore(.file(path: bed.storePath))
            func tokens() async throws -> Set<String> {
                Set(try await store.registrations(matching: RegistrationFilter(), limit: 100, offset: 0).map(\.token))
            }
            try await waitUntil("the bridge reported every registration", timeout: .seconds(15)) {
                (try? await tokens()) == ["token-alice", "token-leaver", "token-vanished"]
            }

            // In-band (XEP-0077): the server deletes the account, and the bridge reports it.
            let leaver = try await bed.client("leaver")
            _ = try await leaver.query(
                .set, to: nil,
                payload: Element(
                    "query", namespace: "jabber:iq:register", [:],
                    children: [Element("remove", namespace: "jabber:iq:register")]))
            await leaver.close()
            try await waitUntil("the deleted account's registration went", timeout: .seconds(15)) {
                (try? await tokens()) == ["token-alice", "token-vanished"]
            }

            // Behind the server's back: nothing reports it, the operator prunes it.
            try await prosody.deleteFromStore(user: "vanished", domain: "localhost")
            try await Self.pruneTheOneGoneAccount(on: bed)
            #expect(try await tokens() == ["token-alice"])
        }
    }

    /// On a real ejabberd with its bridge: an account deleted takes its registrations with it (the
    /// bridge's `remove_user` report); the registration of an account the server does not have (left
    /// from before the bridge reported deletions: written to the store here) is pruned by the
    /// operator's command.
    @Test(arguments: [PushTestbed.Server.ejabberdBridged, .ejabberd24Bridged])
    func onEjabberdADeletedAccountLeavesNoRegistrationBehind(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            guard let ejabberd = bed.server as? EjabberdServer else { throw CancellationError() }
            try await bed.server.register(user: "leaver", password: "pw-leaver")
            for user in ["alice", "leaver"] {
                try await bed.enableDevice(user, token: "token-\(user)")
            }
            let store = try SQLitePushStore(.file(path: bed.storePath))
            func tokens() async throws -> Set<String> {
                Set(try await store.registrations(matching: RegistrationFilter(), limit: 100, offset: 0).map(\.token))
            }
            try await waitUntil("the bridge reported every registration", timeout: .seconds(15)) {
                (try? await tokens()) == ["token-alice", "token-leaver"]
            }
            try await ejabberd.unregister(user: "leaver")
            try await waitUntil("the deleted account's registration went", timeout: .seconds(15)) {
                (try? await tokens()) == ["token-alice"]
            }

            _ = try await store.register(
                RegistrationRequest(
                    domain: "localhost", token: "token-ghost", pushModule: "fcm-test", account: "ghost@localhost",
                    deviceKey: Array(repeating: 7, count: 32), calls: .none, wantsReads: false),
                freshCollapseKey: Array(repeating: 3, count: 32), now: 1_000)
            try await Self.pruneTheOneGoneAccount(on: bed)
            #expect(try await tokens() == ["token-alice"])
        }
    }

    /// The operator (carol) runs the command on localhost, where one of the two accounts with
    /// registrations is gone, confirms it, and is told that its one registration was removed.
    private static func pruneTheOneGoneAccount(on bed: PushTestbed) async throws {
        let carol = try await bed.client("carol")
        let first = try await carol.executeCommand(on: PushTestbed.componentJID, node: node)
        let check = try await carol.executeCommand(
            on: PushTestbed.componentJID, node: node, action: .next, after: first,
            form: DataForm(type: .submit, fields: [.value("domain", "localhost")]))
        let form = try DataForm(element: try #require(check.child("x", namespace: Namespace.dataForms)))
        #expect(
            form.fields.first { $0.type == .fixed }?.value?.hasPrefix("1 registration(s) of 1 of the 2") == true,
            "\(form.fields)")
        let done = try await carol.executeCommand(
            on: PushTestbed.componentJID, node: node, action: .complete, after: check,
            form: DataForm(type: .submit, fields: [.value("confirm", "1")]))
        #expect(
            done.findString("{\(Namespace.commands)}note#")
                == "Removed 1 registration(s) of 1 account(s) of localhost that no longer exist.")
        await carol.close()
    }
}
