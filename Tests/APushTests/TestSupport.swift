import Foundation
import Logging
import Sealing
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush

/// The component secret the instances of a test share: their store's notifications are signed with it.
let testComponentSecret = "test-component-secret"

extension ManualClock {
    /// The module's clock, read and slept on through this one.
    var pushClock: PushClock { PushClock(now: read, sleep: { try await self.sleep(until: $0) }) }
}

/// One upstream publish as the App Server would read it.
extension Sequence<UpstreamPublish> {
    /// Each publish's summary, opened in order as `summaryObject(with:)` opens it.
    func summaries(with device: KeyPair) async throws -> [[String: Any]] {
        var summaries: [[String: Any]] = []
        for publish in self { summaries.append(try await publish.summaryObject(with: device)) }
        return summaries
    }
}

struct UpstreamPublish {
    var iq: Element
    var node: String?
    var pushModule: String?
    var envelope: String?
    var kind: String?
    var collapse: String?

    init(_ iq: Element) {
        self.iq = iq
        node = iq.findString("{http://jabber.org/protocol/pubsub}pubsub/publish@node")
        let fields =
            #"{http://jabber.org/protocol/pubsub}pubsub/publish/item/{urn:xmpp:push:0}notification/\{urn:xmpp:push:summary}submit@"#
        envelope = iq.findString(fields + #"apushEncrypted\"#)
        kind = iq.findString(fields + #"apushKind\"#)
        collapse = iq.findString(fields + #"apushCollapse\"#)
        pushModule = iq.findString(
            #"{http://jabber.org/protocol/pubsub}pubsub/publish-options/\{http://jabber.org/protocol/pubsub#publish-options}submit@pushModule\"#
        )
    }

    /// The sealed summary, opened with the device's key, padding removed. The independent Python
    /// opener must read the same bytes.
    func summary(with device: KeyPair) async throws -> String {
        let envelope = try #require(envelope)
        let plaintext = try Envelope.open(envelope, privateKey: device.privateKey)
        #expect(try await IndependentOpener.open(envelope, privateKey: device.privateKey) == plaintext)
        let text = try #require(String(bytes: plaintext, encoding: .utf8))
        return String(text.reversed().drop(while: { $0 == " " }).reversed())
    }

    func summaryObject(with device: KeyPair) async throws -> [String: Any] {
        let json = try await summary(with: device)
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }
}

/// Publishes and bridge stanzas as a served server sends them.
enum Stanzas {
    static let fixtureKey = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8M="

    struct Options {
        var pushModule = "apush"
        var key: String
        var calls: String? = "1"
        var read: String? = "1"

        var form: String {
            var fields =
                "<field var='FORM_TYPE'><value>http://jabber.org/protocol/pubsub#publish-options</value></field>"
            fields += "<field var='pushModule'><value>\(pushModule)</value></field>"
            fields += "<field var='apushEncryptionPublicKey'><value>\(key)</value></field>"
            if let calls { fields += "<field var='apushCalls'><value>\(calls)</value></field>" }
            if let read { fields += "<field var='apushRead'><value>\(read)</value></field>" }
            return "<x xmlns='jabber:x:data' type='submit'>\(fields)</x>"
        }
    }

    static func publish(
        node: String = "tok123", from: String = "localhost", notification: String,
        options: Options?
    ) -> String {
        let publishOptions = options.map { "<publish-options>\($0.form)</publish-options>" } ?? ""
        return """
            <iq type='set' from='\(from)' to='apush.localhost' id='p1'><pubsub xmlns='http://jabber.org/protocol/pubsub'>\
            <publish node='\(node)'><item><notification xmlns='urn:xmpp:push:0'>\(notification)</notification></item>\
            </publish>\(publishOptions)</pubsub></iq>
            """
    }

    /// A bridged notification: the account and the forwarded stanza.
    static func bridged(_ stanza: String, account: String = "alice@localhost") -> String {
        "<account xmlns='urn:xmpp:apush:bridge:0' jid='\(account)' important='true'/>"
            + "<forwarded xmlns='urn:xmpp:forward:0'>\(stanza)</forwarded>"
    }

    static func chat(
        id: String, body: String = "secret body text", from: String = "bob@localhost/laptop",
        to: String = "alice@localhost"
    ) -> String {
        "<message xmlns='jabber:client' type='chat' id='\(id)' from='\(from)' to='\(to)'><body>\(body)</body>"
            + "<origin-id xmlns='urn:xmpp:sid:0' id='\(id)'/>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='s-\(id)' by='alice@localhost'/></message>"
    }

    static func propose(sid: String, media: [String] = ["audio"]) -> String {
        "<message xmlns='jabber:client' type='chat' id='c-\(sid)' from='bob@localhost/laptop' to='alice@localhost'>"
            + "<propose xmlns='urn:xmpp:jingle-message:0' id='\(sid)'>"
            + media.map { "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='\($0)'/>" }.joined()
            + "</propose></message>"
    }

    static func jingle(_ action: String, sid: String, from: String = "bob@localhost/laptop") -> String {
        "<message xmlns='jabber:client' type='chat' from='\(from)' to='alice@localhost'>"
            + "<\(action) xmlns='urn:xmpp:jingle-message:0' id='\(sid)'/></message>"
    }

    /// The account's desktop marks the chat with `chat` displayed (the carbon its phone would get).
    static func displayedCarbon(chat: String = "bob@localhost") -> String {
        "<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>"
            + "<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + "<message xmlns='jabber:client' from='alice@localhost/desktop' to='\(chat)' type='chat' id='d1'>"
            + "<displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/></message></forwarded></sent></message>"
    }

    static func presence() -> String {
        "<presence xmlns='jabber:client' from='carol@localhost/x' to='alice@localhost/phone'/>"
    }

    static func registered(
        token: String = "tok123", account: String = "alice@localhost", from: String = "localhost",
        options: Options
    ) -> String {
        """
        <message from='\(from)' to='apush.localhost' type='normal'><registered xmlns='urn:xmpp:apush:bridge:0' \
        account='\(account)' resource='phone'><enable xmlns='urn:xmpp:push:0' jid='apush.localhost' node='\(token)'>\
        \(options.form)</enable></registered></message>
        """
    }

    static func unregistered(token: String?, account: String = "alice@localhost") -> String {
        let disable = token.map { "<disable xmlns='urn:xmpp:push:0' jid='apush.localhost' node='\($0)'/>" } ?? ""
        return """
            <message from='localhost' to='apush.localhost' type='normal'><unregistered xmlns='urn:xmpp:apush:bridge:0' \
            account='\(account)'>\(disable)</unregistered></message>
            """
    }
}

/// A PushService on a real SQLite store, a manual clock, a recording App Server and an in-memory log.
struct Harness {
    static let appServer = "push.example.org"

    let store: SQLitePushStore
    let clock: ManualClock
    let sender = RecordingSender()
    let logs = InMemoryLogSink()
    let service: PushService
    let device: KeyPair
    let upstreamLink: Upstream

    init(
        settings: APushSettings = APushSettings(), store: SQLitePushStore? = nil, clock: ManualClock = ManualClock(),
        device: KeyPair? = nil
    ) throws {
        self.store = try store ?? SQLitePushStore(.memory)
        self.clock = clock
        var settings = settings
        settings.appServer = Self.appServer
        service = PushService(
            store: self.store, settings: settings,
            logger: Logger(label: "test", level: .trace, sink: logs), clock: clock.pushClock)
        upstreamLink = Upstream(
            sender: sender, componentJID: try JID("apush.localhost"),
            appServer: try JID(Self.appServer), timeout: .seconds(25))
        self.device = device ?? KeyPair.generate()
    }

    func options(calls: String? = "1", read: String? = "1", pushModule: String = "apush") -> Stanzas.Options {
        Stanzas.Options(pushModule: pushModule, key: Base64.encode(device.publicKey), calls: calls, read: read)
    }

    /// Sends the server's publish; returns nil for a result, else the error the server is answered.
    @discardableResult
    func publish(_ xml: String) async throws -> StanzaError? {
        let iq = try Element.parse(xml)
        do {
            try await service.handlePublish(iq, servedDomains: ["localhost"], upstream: upstreamLink)
            return nil
        } catch {
            return error
        }
    }

    /// A bridged publish for the account, with this registration's options.
    @discardableResult
    func publishBridged(
        _ stanza: String, node: String = "tok123", options: Stanzas.Options? = nil,
        account: String = "alice@localhost"
    ) async throws -> StanzaError? {
        try await publish(
            Stanzas.publish(
                node: node, notification: Stanzas.bridged(stanza, account: account),
                options: options ?? self.options()))
    }

    /// Runs one turn of the background work and waits until the deliveries it started are answered.
    func processDueWork() async throws {
        try await service.processDueWork(upstream: upstreamLink)
        try await waitForBackgroundDeliveries()
    }

    /// Waits (briefly) until no background delivery is in flight.
    func waitForBackgroundDeliveries() async throws {
        for _ in 0..<5000 where service.dueWork.deliveriesInFlight > 0 {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(service.dueWork.deliveriesInFlight == 0)
    }

    func bridge(_ xml: String) async throws {
        try await service.handleBridge(
            try Element.parse(xml), servedDomains: ["localhost"], componentJID: try JID("apush.localhost"))
    }

    var upstream: [UpstreamPublish] { sender.requests.map(UpstreamPublish.init) }

    func summaries() async throws -> [[String: Any]] {
        try await upstream.summaries(with: device)
    }
}

extension PushStore {
    /// The registration a stock publish (no account named) for the token would use.
    func registration(domain: String, token: String) async throws -> Registration? {
        try await registration(domain: domain, token: token, account: nil)
    }
}

extension SQLitePushStore {
    /// A store on `mount` made read-only before it starts: every call fails with `StoreUnavailableError`,
    /// until the mount is writable again and the next call opens it.
    static func unavailable(on mount: ScratchMount) throws -> SQLitePushStore {
        try mount.setReadOnly(true)
        return try SQLitePushStore(
            .file(path: mount.directory.appendingPathComponent("apush.sqlite").path),
            reopenInterval: .zero)
    }
}
