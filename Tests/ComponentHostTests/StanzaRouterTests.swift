import ComponentHost
import Logging
import Synchronization
import Testing
import XMLStream
import XMPP

/// A module with one of everything the host routes; shared with the ComponentService tests.
struct TestModule: HostedModule {
    static let namespace = "urn:example:test"
    static let admin = try! JID("boss@localhost")

    struct Failure: Error {}

    /// The messages the module's message route took.
    let messages = MessageLog()

    var discoIdentities: [DiscoIdentity] { [DiscoIdentity(category: "pubsub", type: "push", name: "Test push")] }
    var discoFeatures: [String] { [Self.namespace, Namespace.ping] }

    var iqRoutes: [IQRoute] {
        [
            IQRoute(.get, "echo", namespace: Self.namespace) { iq, _ in
                Element("echo", namespace: Self.namespace, [:], text: iq.findString("{\(Self.namespace)}echo#"))
            },
            IQRoute(.set, "nothing", namespace: Self.namespace) { _, _ in nil },
            IQRoute(.set, "refuse", namespace: Self.namespace) { _, _ in
                throw StanzaError(.notAcceptable, text: "refused")
            },
            IQRoute(.set, "crash", namespace: Self.namespace) { _, _ in throw Failure() },
        ]
    }

    var messageRoutes: [MessageRoute] {
        [
            MessageRoute(namespace: Self.namespace) { [messages] message, _ in
                messages.append(message)
                if message.check("{\(Self.namespace)}refuse") { throw StanzaError(.notAllowed) }
                if message.check("{\(Self.namespace)}crash") { throw Failure() }
            }
        ]
    }

    func commands(context: ModuleContext) -> [AdHocCommand] {
        [
            AdHocCommand(node: "hello", name: "Say hello", isAllowed: { _ in true }) { request in
                .completed(AdHocNote(.info, "hello \(request.requester.bare)"))
            },
            AdHocCommand(node: "admin", name: "Admin only", isAllowed: { $0.bare == Self.admin }) { _ in
                .completed(AdHocNote(.info, "yes, boss"))
            },
        ]
    }
}

final class MessageLog: Sendable {
    private let storage = Mutex<[Element]>([])
    func append(_ message: Element) { storage.withLock { $0.append(message) } }
    var all: [Element] { storage.withLock { $0 } }
}

struct NoSender: StanzaSender {
    func send(_ stanza: Element) throws { throw ComponentLinkError.notConnected }
    func request(_ iq: Element, timeout: Duration) async throws -> Element { throw ComponentLinkError.notConnected }
}

@Suite struct StanzaRouterTests {
    static let component = try! JID("apush.localhost")
    static let user = try! JID("alice@localhost/phone")

    let module = TestModule()

    private var router: StanzaRouter {
        StanzaRouter(
            modules: [module],
            context: ModuleContext(
                componentJID: Self.component, servedDomains: ["localhost"], admins: [TestModule.admin],
                sender: NoSender(),
                logger: .disabled), software: ("apush-component", "9.9"),
            sessionKey: AdHocSessionKey(componentSecret: "secret"))
    }

    private func iq(_ type: IQType, from: JID = Self.user, _ payloads: Element...) -> Element {
        var iq = Element.iq(type: type, id: "q1", from: from, to: Self.component)
        for payload in payloads { iq.append(payload) }
        return iq
    }

    private func result(of stanza: Element) async throws -> Element {
        let reply = try #require(await router.route(stanza))
        #expect(reply.stanzaID == stanza.stanzaID)
        #expect(reply.toString == stanza.fromString && reply.fromString == stanza.toString)
        #expect(reply.iqType == .result, "\(reply.serialized())")
        return reply
    }

    private func error(of stanza: Element) async throws -> StanzaError {
        let reply = try #require(await router.route(stanza))
        #expect(reply.stanzaType == "error")
        return try #require(StanzaError(stanza: reply), "\(reply.serialized())")
    }

    @Test func discoInfoListsTheModulesIdentityAndTheFeaturesOnce() async throws {
        let reply = try await result(of: iq(.get, Element("query", namespace: Namespace.discoInfo)))
        let info = try DiscoInfo(element: try #require(reply.elements.first))
        #expect(info.identities == [DiscoIdentity(category: "pubsub", type: "push", name: "Test push")])
        #expect(
            info.features == [
                Namespace.discoInfo, Namespace.discoItems, Namespace.ping, Namespace.version,
                Namespace.commands, TestModule.namespace,
            ])
    }

    @Test func discoItemsOfTheCommandsNodeListOnlyWhatTheRequesterMayRun() async throws {
        let query = Element("query", namespace: Namespace.discoItems, ["node": Namespace.commands])
        let forUser = try DiscoItems(element: try #require(try await result(of: iq(.get, query)).elements.first))
        #expect(forUser.node == Namespace.commands)
        #expect(forUser.items == [DiscoItem(jid: Self.component, node: "hello", name: "Say hello")])
        let boss = try JID("boss@localhost/desk")
        let forAdmin = try DiscoItems(
            element: try #require(try await result(of: iq(.get, from: boss, query)).elements.first))
        #expect(forAdmin.items.map(\.node) == ["hello", "admin"])
    }

    @Test func discoOfACommandNode() async throws {
        let hello = Element("query", namespace: Namespace.discoInfo, ["node": "hello"])
        let info = try DiscoInfo(element: try #require(try await result(of: iq(.get, hello)).elements.first))
        #expect(info.node == "hello")
        #expect(info.identities == [DiscoIdentity(category: "automation", type: "command-node", name: "Say hello")])
        #expect(info.features == [Namespace.commands, Namespace.dataForms])
        let commands = Element("query", namespace: Namespace.discoInfo, ["node": Namespace.commands])
        let list = try DiscoInfo(element: try #require(try await result(of: iq(.get, commands)).elements.first))
        #expect(list.features == [Namespace.commands])
        let unknown = Element("query", namespace: Namespace.discoInfo, ["node": "no-such-command"])
        #expect(try await error(of: iq(.get, unknown)).condition == .itemNotFound)
    }

    /// XEP-0050 §4: a command the requester may not run is `forbidden` (type `cancel`), not unknown.
    @Test func discoInfoOfACommandTheRequesterMayNotRunIsForbidden() async throws {
        let hidden = Element("query", namespace: Namespace.discoInfo, ["node": "admin"])
        let refusal = try await error(of: iq(.get, hidden))
        #expect(refusal.condition == .forbidden)
        #expect(refusal.type == .cancel)
    }

    /// XEP-0030 §3.1: every disco#info answer holds an identity; XEP-0050 registers this one.
    @Test func discoInfoOfTheCommandListNodeHasTheCommandListIdentity() async throws {
        let commands = Element("query", namespace: Namespace.discoInfo, ["node": Namespace.commands])
        let list = try DiscoInfo(element: try #require(try await result(of: iq(.get, commands)).elements.first))
        #expect(list.node == Namespace.commands)
        #expect(list.identities.map { "\($0.category)/\($0.type)" } == ["automation/command-list"])
    }

    @Test func discoItemsWithoutNodeIsEmptyAndAnUnknownNodeIsNotFound() async throws {
        let items = try await result(of: iq(.get, Element("query", namespace: Namespace.discoItems)))
        #expect(try DiscoItems(element: try #require(items.elements.first)).items.isEmpty)
        let unknown = Element("query", namespace: Namespace.discoItems, ["node": "nope"])
        #expect(try await error(of: iq(.get, unknown)).condition == .itemNotFound)
    }

    @Test func pingIsAnsweredWithAnEmptyResult() async throws {
        let reply = try await result(of: iq(.get, Element("ping", namespace: Namespace.ping)))
        #expect(reply.elements.isEmpty)
    }

    @Test func versionNamesTheSoftware() async throws {
        let reply = try await result(of: iq(.get, Element("query", namespace: Namespace.version)))
        #expect(reply.findString("{jabber:iq:version}query/name#") == "apush-component")
        #expect(reply.findString("{jabber:iq:version}query/version#") == "9.9")
    }

    @Test func commandsRunThroughTheRouter() async throws {
        let command = Element("command", namespace: Namespace.commands, ["node": "hello", "action": "execute"])
        let reply = try await result(of: iq(.set, command))
        #expect(reply.findString("{\(Namespace.commands)}command@status") == "completed")
        #expect(reply.findString("{\(Namespace.commands)}command/note#") == "hello alice@localhost")
        let admin = Element("command", namespace: Namespace.commands, ["node": "admin"])
        #expect(try await error(of: iq(.set, admin)).condition == .forbidden)
    }

    @Test func moduleRoutesAnswerTheirIQs() async throws {
        let echo = Element("echo", namespace: TestModule.namespace, [:], text: "hi")
        let reply = try await result(of: iq(.get, echo))
        #expect(reply.findString("{\(TestModule.namespace)}echo#") == "hi")
        let empty = try await result(of: iq(.set, Element("nothing", namespace: TestModule.namespace)))
        #expect(empty.elements.isEmpty)
    }

    @Test func aRouteIsForItsKindOnly() async throws {
        let echoAsSet = Element("echo", namespace: TestModule.namespace, [:], text: "hi")
        #expect(try await error(of: iq(.set, echoAsSet)).condition == .serviceUnavailable)
    }

    @Test func anIQNobodyHandlesIsServiceUnavailable() async throws {
        let error = try await error(of: iq(.get, Element("query", namespace: "urn:example:unknown")))
        #expect(error.condition == .serviceUnavailable)
        #expect(error.type == .cancel)
    }

    @Test func aStanzaErrorFromAHandlerIsSentAsItIs() async throws {
        let error = try await error(of: iq(.set, Element("refuse", namespace: TestModule.namespace)))
        #expect(error == StanzaError(.notAcceptable, text: "refused"))
    }

    @Test func anyOtherErrorIsAnInternalServerError() async throws {
        let error = try await error(of: iq(.set, Element("crash", namespace: TestModule.namespace)))
        #expect(error == StanzaError(.internalServerError))
    }

    @Test func malformedIQsAreBadRequests() async throws {
        let ping = Element("ping", namespace: Namespace.ping)
        #expect(try await error(of: iq(.get, ping, ping)).condition == .badRequest, "two payloads")
        #expect(try await error(of: iq(.get)).condition == .badRequest, "no payload")
        var withoutFrom = iq(.get, ping)
        withoutFrom[attribute: "from"] = nil
        #expect(try await error(of: withoutFrom).condition == .badRequest)
        var withoutID = iq(.get, ping)
        withoutID[attribute: "id"] = nil
        #expect(try await error(of: withoutID).condition == .badRequest)
    }

    @Test func answersAndUnknownIQTypesGetNoReply() async {
        #expect(await router.route(iq(.result)) == nil)
        #expect(await router.route(iq(.error)) == nil)
        var odd = iq(.get, Element("ping", namespace: Namespace.ping))
        odd[attribute: "type"] = "weird"
        #expect(await router.route(odd) == nil)
        #expect(await router.route(Element("presence", namespace: Namespace.componentAccept)) == nil)
    }

    @Test func messagesGoToTheModuleThatDeclaredTheirNamespace() async throws {
        let message = Element.message(
            id: "m1", from: Self.user, to: Self.component,
            children: [Element("hello", namespace: TestModule.namespace)])
        #expect(await router.route(message) == nil)
        #expect(module.messages.all == [message])
        let other = Element.message(
            id: "m2", from: Self.user, to: Self.component,
            children: [Element("body", namespace: Namespace.componentAccept, [:], text: "x")])
        #expect(await router.route(other) == nil, "a message nobody handles is dropped")
        #expect(module.messages.all.count == 1)
    }

    @Test func aMessageHandlerErrorIsAMessageError() async throws {
        let refused = Element.message(
            id: "m3", from: Self.user, to: Self.component,
            children: [Element("refuse", namespace: TestModule.namespace)])
        let reply = try #require(await router.route(refused))
        #expect(reply.name == "message" && reply.stanzaType == "error" && reply.stanzaID == "m3")
        #expect(StanzaError(stanza: reply)?.condition == .notAllowed)
        let crashed = Element.message(
            id: "m4", from: Self.user, to: Self.component,
            children: [Element("crash", namespace: TestModule.namespace)])
        #expect(try await error(of: crashed).condition == .internalServerError)
    }

    @Test func errorMessagesAreIgnored() async {
        let message = Element(
            "message", namespace: Namespace.componentAccept,
            ["type": "error", "from": Self.user.description, "to": Self.component.description],
            children: [Element("hello", namespace: TestModule.namespace)])
        #expect(await router.route(message) == nil)
        #expect(module.messages.all.isEmpty)
    }
}
