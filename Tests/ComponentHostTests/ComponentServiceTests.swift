import HTTPServer
import Logging
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

@testable import ComponentHost

/// The whole host (configuration, link, router, module) against the stand-in server.
@Suite(.timeLimit(.minutes(3)))
struct ComponentServiceTests {
    static let user = try! JID("alice@localhost/phone")

    /// A relay that asks one entity, and records nothing (only the choice of what to pass is tested).
    private struct AskingRelay: AnswerRelay {
        let asked: JID
        func asks(_ entity: JID) -> Bool { entity == asked }
        func pass(_ answer: Element) {}
        func watch(_ deliver: @escaping @Sendable (Element) -> Void) -> (any RelayWatch)? { nil }
    }

    /// Only answers from whom the instances ask (the pinged server, the module's App Server) are passed
    /// on to the other instances: anyone may send the component an IQ result.
    @Test func onlyAnswersFromThoseAskedArePassedOn() throws {
        let relay = AskingRelay(asked: try JID("push.localhost"))
        let server = try JID("localhost")
        func answer(from: String?) -> Element {
            var iq = Element("iq", ["type": "result", "id": "x-1"])
            iq[attribute: "from"] = from
            return iq
        }
        #expect(isAnswer(answer(from: "push.localhost"), ofWhomAsked: relay, pinged: server))
        #expect(isAnswer(answer(from: "localhost"), ofWhomAsked: relay, pinged: server))
        #expect(!isAnswer(answer(from: "mallory@localhost/x"), ofWhomAsked: relay, pinged: server))
        #expect(!isAnswer(answer(from: nil), ofWhomAsked: relay, pinged: server))
        #expect(!isAnswer(answer(from: "not a jid@@"), ofWhomAsked: relay, pinged: server))
    }

    @Test func servesDiscoAndCommandsThroughTheStandIn() async throws {
        let server = try StandInComponentServer(componentJID: "apush.localhost", secret: "service-secret")
        defer { server.stop() }
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost",
                "APUSH_COMPONENT_SECRET": "service-secret",
                "APUSH_DOMAINS": "localhost",
                "APUSH_SERVER": "127.0.0.1:\(server.port)",
            ], schema: .hostOnly)
        let service = try ComponentService(configuration: configuration, modules: [TestModule()], logger: .disabled)
        let connected = ConnectedCount()
        let running = Task { await service.run(onEvent: { if $0 == .connected { connected.increment() } }) }
        defer { running.cancel() }

        try await server.waitForConnection()
        let info = try await server.request(
            .iq(
                type: .get, id: "d1", from: Self.user, to: service.context.componentJID,
                payload: Element("query", namespace: Namespace.discoInfo)))
        #expect(info.iqType == .result && info.toString == Self.user.description)
        let disco = try DiscoInfo(element: try #require(info.elements.first))
        #expect(disco.identities.map(\.type) == ["push"])
        #expect(disco.hasFeature(TestModule.namespace))

        let items = try await server.request(
            .iq(
                type: .get, id: "d2", from: Self.user, to: service.context.componentJID,
                payload: Element("query", namespace: Namespace.discoItems, ["node": Namespace.commands])))
        #expect(try DiscoItems(element: try #require(items.elements.first)).items.map(\.node) == ["hello"])

        let command = try await server.request(
            .iq(
                type: .set, id: "c1", from: Self.user, to: service.context.componentJID,
                payload: Element("command", namespace: Namespace.commands, ["node": "hello"])))
        #expect(command.findString("{\(Namespace.commands)}command/note#") == "hello alice@localhost")

        let version = try await server.request(
            .iq(
                type: .get, id: "v1", from: Self.user, to: service.context.componentJID,
                payload: Element("query", namespace: Namespace.version)))
        #expect(version.findString("{jabber:iq:version}query/name#") == ComponentService.softwareName)

        // The host keeps serving across a reconnect. (The first seconds of a full run under a sanitizer
        // can already have made it connect twice: its handshake has a deadline.)
        let connections = connected.value
        server.dropConnection()
        try await waitUntil("the component connected again", timeout: .seconds(20)) {
            connected.value > connections
        }
        let again = try await server.request(
            .iq(
                type: .get, id: "p1", from: Self.user, to: service.context.componentJID,
                payload: Element("ping", namespace: Namespace.ping)))
        #expect(again.iqType == .result)

        running.cancel()
        await running.value
        #expect(server.streamErrors.isEmpty)
    }

    @Test func theServiceTakesItsLinkSettingsFromTheConfiguration() throws {
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.example.org",
                "APUSH_COMPONENT_SECRET": "s",
                "APUSH_DOMAINS": "example.org,example.net",
                "APUSH_ADMINS": "boss@example.org",
            ], schema: .hostOnly)
        let service = try ComponentService(configuration: configuration, modules: [], logger: .disabled)
        #expect(service.context.componentJID == (try JID("apush.example.org")))
        #expect(service.context.servedDomains == ["example.org", "example.net"])
        #expect(service.context.isAdmin(try JID("boss@example.org/desk")))
        #expect(!service.context.isAdmin(try JID("boss@example.com/desk")))
    }
}

final class ConnectedCount: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

extension ComponentServiceTests {
    struct WaitingModule: HostedModule {
        var maxRequestsInFlight: Int
    }

    @Test func theLinkHandlesTwiceAsManyStanzasAtOnceAsModulesMayHaveRequestsWaiting() {
        let defaultCap = ComponentConnectionSettings.defaultMaxStanzasInHandling
        #expect(ComponentService.maxStanzasInHandling(for: []) == defaultCap)
        #expect(
            ComponentService.maxStanzasInHandling(for: [TestModule(), WaitingModule(maxRequestsInFlight: 512)])
                == defaultCap)
        #expect(
            ComponentService.maxStanzasInHandling(for: [
                WaitingModule(maxRequestsInFlight: 2000),
                WaitingModule(maxRequestsInFlight: 500),
            ]) == 5000)
    }
}

extension ConfigurationSchema {
    /// The host's keys alone, with apush-component's prefix.
    static let hostOnly = ConfigurationSchema(environmentPrefix: "APUSH_", modules: [])
}

/// A module with one page on the operations endpoint: the link's state as the host reports it.
private struct LinkPageModule: HostedModule {
    func httpRoutes(context: ModuleContext, host: HostStatus) -> [HTTPRoute] {
        [
            HTTPRoute("/link") {
                HTTPResponse(.ok, body: "\(host.linkIsUp ? "up" : "down") \(host.linkReconnects)")
            }
        ]
    }
}

extension ComponentServiceTests {
    /// With `http` set, the modules' pages are served, and what they read of the host follows the link.
    @Test func servesTheModulesPagesWithTheLinksState() async throws {
        let server = try StandInComponentServer(componentJID: "apush.localhost", secret: "service-secret")
        defer { server.stop() }
        let httpPort = try TestPorts.next()
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "service-secret",
                "APUSH_DOMAINS": "localhost", "APUSH_SERVER": "127.0.0.1:\(server.port)",
                "APUSH_HTTP": "127.0.0.1:\(httpPort)",
            ], schema: .hostOnly)
        let service = try ComponentService(configuration: configuration, modules: [LinkPageModule()], logger: .disabled)
        #expect(service.http?.port == UInt16(httpPort))
        let running = Task { await service.run() }
        defer { running.cancel() }

        // Counted from what the page first says: on a loaded machine a handshake may time out once.
        try await server.waitForConnection()
        let first = try #require(try await Self.pageSaysUp(port: UInt16(httpPort)) { _ in true })
        server.dropConnection()
        #expect(try await Self.pageSaysUp(port: UInt16(httpPort)) { $0 > first } != nil)
        #expect(try await HTTPTestClient.request("/other", port: UInt16(httpPort)).status == 404)

        running.cancel()
        await running.value
        await #expect(throws: (any Error).self) { try await HTTPTestClient.request("/link", port: UInt16(httpPort)) }
    }

    /// The reconnects the page shows once it says the link is up with a count that `accepts`, within
    /// 30 s (the host learns of the link just after the server); nil if it never does.
    private static func pageSaysUp(port: UInt16, accepts: (Int) -> Bool) async throws -> Int? {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let words = try await HTTPTestClient.request("/link", port: port).body.split(separator: " ")
            if words.count == 2, words[0] == "up", let reconnects = Int(words[1]), accepts(reconnects) {
                return reconnects
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    @Test func withoutHTTPNothingIsServed() throws {
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s", "APUSH_DOMAINS": "localhost",
            ], schema: .hostOnly)
        #expect(
            try ComponentService(configuration: configuration, modules: [LinkPageModule()], logger: .disabled).http
                == nil)
    }
}

/// A module that records what it hears of the link.
private final class LinkWatchingModule: HostedModule, Sendable {
    private let changes = Mutex<[Bool]>([])
    var heard: [Bool] { changes.withLock { $0 } }
    func linkChanged(up: Bool) { changes.withLock { $0.append(up) } }
}

extension ComponentServiceTests {
    /// Modules hear the link come up and drop, so they can forget what only held while it was up.
    @Test func modulesHearTheLinkComeUpAndDrop() async throws {
        let server = try StandInComponentServer(componentJID: "apush.localhost", secret: "service-secret")
        defer { server.stop() }
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "service-secret",
                "APUSH_DOMAINS": "localhost", "APUSH_SERVER": "127.0.0.1:\(server.port)",
            ], schema: .hostOnly)
        let module = LinkWatchingModule()
        let service = try ComponentService(configuration: configuration, modules: [module], logger: .disabled)
        let running = Task { await service.run() }
        defer { running.cancel() }

        try await server.waitForConnection()
        try await waitUntil("the module hears the link up") { module.heard.last == true }
        server.dropConnection()
        try await waitUntil("the module hears the link drop") { module.heard.contains(false) }
        #expect(module.heard.first == true)
    }
}
