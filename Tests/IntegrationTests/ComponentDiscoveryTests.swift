import ComponentHost
import Foundation
import Logging
import Testing
import XMLStream
import XMPP

@testable import LocalServers

/// The host as a component of a REAL Prosody and a REAL ejabberd: a user who logs in over c2s
/// discovers the component and runs its command through the server, also after the server restarts.
/// A missing server fails these tests: never skipped.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ComponentDiscoveryTests {
    static let componentJID = "apush.localhost"
    static let secret = "discovery-secret"
    static let feature = "urn:example:discovery"

    struct DiscoveryModule: HostedModule {
        var discoIdentities: [DiscoIdentity] { [DiscoIdentity(category: "pubsub", type: "push", name: "apush test")] }
        var discoFeatures: [String] { [ComponentDiscoveryTests.feature] }
        func commands(context: ModuleContext) -> [AdHocCommand] {
            [
                AdHocCommand(node: "greet", name: "Greet", isAllowed: { $0.domainpart == "localhost" }) { request in
                    .completed(AdHocNote(.info, "hello \(request.requester.bare)"))
                }
            ]
        }
    }

    @Test(arguments: [ProsodyServer.Release.v0_12, .v13])
    func prosody(release: ProsodyServer.Release) async throws {
        try await discoverAndSurviveARestart(
            try ProsodyServer(
                release: release,
                componentJID: Self.componentJID,
                componentSecret: Self.secret))
    }

    @Test(arguments: EjabberdServer.Release.allCases)
    func ejabberd(release: EjabberdServer.Release) async throws {
        try await discoverAndSurviveARestart(
            try EjabberdServer(
                componentJID: Self.componentJID,
                componentSecret: Self.secret, release: release))
    }

    private func discoverAndSurviveARestart(_ server: any XMPPTestServer) async throws {
        try await server.start()
        let events = Mailbox<ConnectionEvent>(name: "a component link event")
        var running: Task<Void, Never>?
        do {
            try await server.register(user: "alice", password: "wonderland")
            let configuration = try Configuration.load(
                file: nil,
                environment: [
                    "APUSH_COMPONENT_JID": Self.componentJID,
                    "APUSH_COMPONENT_SECRET": Self.secret,
                    "APUSH_DOMAINS": "localhost",
                    "APUSH_SERVER": "127.0.0.1:\(server.componentPort)",
                ], schema: ConfigurationSchema(environmentPrefix: "APUSH_", modules: []))
            let service = try ComponentService(
                configuration: configuration, modules: [DiscoveryModule()],
                logger: .disabled)
            running = Task { await service.run(onEvent: { events.put($0) }) }
            _ = try await events.take(matching: { $0 == .connected }, timeout: .seconds(30))

            try await discover(through: server)

            try await server.restart()
            _ = try await events.take(
                matching: { $0 == .connected }, timeout: .seconds(30),
                what: "the component's second connection")
            try await discover(through: server)
        } catch {
            Issue.record("\(error)\n\(await server.logContents(lastLines: 60))")
        }
        running?.cancel()
        await running?.value
        await server.stop()
    }

    private func discover(through server: any XMPPTestServer) async throws {
        let client = try await C2SClient.connect(
            port: server.c2sPort, domain: "localhost", user: "alice",
            password: "wonderland")
        #expect(client.jid.bare == (try JID("alice@localhost")))

        let info = try await client.discoInfo(of: Self.componentJID)
        #expect(info.identities.contains(DiscoIdentity(category: "pubsub", type: "push", name: "apush test")))
        #expect(info.hasFeature(Self.feature))
        #expect(info.hasFeature(Namespace.commands))

        let items = try await client.discoItems(of: Self.componentJID, node: Namespace.commands)
        #expect(items.items == [DiscoItem(jid: try JID(Self.componentJID), node: "greet", name: "Greet")])

        let answer = try await client.executeCommand(on: Self.componentJID, node: "greet")
        #expect(answer[attribute: "status"] == "completed")
        #expect(answer.findString("note#") == "hello alice@localhost")
        await client.close()
    }
}
