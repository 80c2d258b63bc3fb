import Foundation
import Synchronization
public import XMLStream
import Sockets
public import XMPP

/// A client-to-server connection for tests and the demo: a real user logging in to Prosody or
/// ejabberd over plain TCP (SASL PLAIN, no TLS: the test servers allow it), binding a resource, and
/// talking to components through the server.
public final class C2SClient: Sendable {
    /// The full JID the server bound.
    public let jid: JID
    public let domain: String
    private let connection: TCPConnection
    private let events: Mailbox<StreamEvent>
    private let nextID = Mutex(0)

    static let saslNamespace = "urn:ietf:params:xml:ns:xmpp-sasl"
    static let bindNamespace = "urn:ietf:params:xml:ns:xmpp-bind"
    static let sessionNamespace = "urn:ietf:params:xml:ns:xmpp-session"

    /// Why logging in failed.
    public struct LoginError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    private init(jid: JID, domain: String, connection: TCPConnection, events: Mailbox<StreamEvent>) {
        self.jid = jid
        self.domain = domain
        self.connection = connection
        self.events = events
    }

    /// Connects to `host:port`, authenticates `user@domain` with PLAIN, binds `resource`, and sends
    /// initial presence when `presence` is true.
    public static func connect(
        host: String = "127.0.0.1", port: Int, domain: String, user: String,
        password: String, resource: String = "tests", presence: Bool = true,
        timeout: Duration = .seconds(10)
    ) async throws -> C2SClient {
        let connection = try await TCPConnection.connect(host: host, port: UInt16(port))
        let events = Mailbox<StreamEvent>(name: "a stanza from the server")
        startReading(connection, into: events)
        do {
            let jid = try await negotiate(
                connection, events, domain: domain, user: user, password: password,
                resource: resource, timeout: timeout)
            let client = C2SClient(jid: jid, domain: domain, connection: connection, events: events)
            if presence { try client.send(Element("presence", namespace: Namespace.client)) }
            return client
        } catch {
            connection.close()
            throw error
        }
    }

    private static func negotiate(
        _ connection: TCPConnection, _ events: Mailbox<StreamEvent>, domain: String,
        user: String, password: String, resource: String,
        timeout: Duration
    ) async throws -> JID {
        func openStream() async throws -> Element {
            try connection.send(
                "<?xml version='1.0'?><stream:stream xmlns='\(Namespace.client)' "
                    + "xmlns:stream='\(Namespace.streams)' to='\(XMLEscaping.escaped(domain))' version='1.0'>")
            _ = try await events.take(
                matching: { if case .streamStart = $0 { true } else { false } },
                timeout: timeout, what: "the server's stream header")
            return try await nextStanza(events, timeout: timeout, what: "<stream:features/>") {
                $0.name == "features" && $0.namespace == Namespace.streams
            }
        }

        let features = try await openStream()
        let mechanisms = features.child("mechanisms", namespace: saslNamespace)?.elements.map(\.text) ?? []
        guard mechanisms.contains("PLAIN") else {
            throw LoginError(description: "the server offers no SASL PLAIN (offered: \(mechanisms))")
        }
        let credentials = Data([0] + Array(user.utf8) + [0] + Array(password.utf8)).base64EncodedString()
        try connection.send(
            Element("auth", namespace: saslNamespace, ["mechanism": "PLAIN"], text: credentials)
                .serialized(parentNamespace: Namespace.client))
        let outcome = try await nextStanza(events, timeout: timeout, what: "the SASL outcome") {
            $0.namespace == saslNamespace && ($0.name == "success" || $0.name == "failure")
        }
        guard outcome.name == "success" else {
            let reason = outcome.elements.first?.name ?? "no reason"
            throw LoginError(description: "SASL PLAIN for \(user)@\(domain) failed: \(reason)")
        }

        let restarted = try await openStream()
        let bind = Element.iq(
            type: .set, id: "bind-1",
            payload: Element(
                "bind", namespace: bindNamespace, [:],
                children: [Element("resource", namespace: bindNamespace, [:], text: resource)]),
            namespace: Namespace.client)
        try connection.send(bind.serialized(parentNamespace: Namespace.client))
        let bound = try await nextStanza(events, timeout: timeout, what: "the bind result") { $0.stanzaID == "bind-1" }
        guard bound.iqType == .result,
            let text = bound.child("bind", namespace: bindNamespace)?.child("jid")?.text,
            let jid = try? JID(text)
        else {
            throw LoginError(description: "binding a resource failed: \(bound.serialized())")
        }
        // RFC 3921 sessions: only where the server does not mark them optional (old ejabberd, Prosody
        // 0.12 both accept one either way).
        if let session = restarted.child("session", namespace: sessionNamespace),
            session.child("optional", namespace: sessionNamespace) == nil
        {
            let request = Element.iq(
                type: .set, id: "session-1",
                payload: Element("session", namespace: sessionNamespace),
                namespace: Namespace.client)
            try connection.send(request.serialized(parentNamespace: Namespace.client))
            _ = try await nextStanza(events, timeout: timeout, what: "the session result") {
                $0.stanzaID == "session-1"
            }
        }
        return jid
    }

    private static func nextStanza(
        _ events: Mailbox<StreamEvent>, timeout: Duration, what: String,
        matching matches: @escaping @Sendable (Element) -> Bool
    ) async throws -> Element {
        let event = try await events.take(
            matching: { event in
                if case .stanza(let stanza) = event { matches(stanza) } else { false }
            }, timeout: timeout, what: what)
        guard case .stanza(let stanza) = event else { preconditionFailure("matched a stanza") }
        return stanza
    }

    /// Reads until the connection ends. The stream restarts after SASL success (RFC 6120 §6.4.6), so
    /// the parser is reset there. IQ requests from the server are answered here: a ping with a result,
    /// anything else with service-unavailable.
    private static func startReading(_ connection: TCPConnection, into events: Mailbox<StreamEvent>) {
        Task {
            let parser = StreamParser()
            do {
                for try await chunk in connection.incoming() {
                    for event in try parser.feed(chunk) {
                        if case .stanza(let stanza) = event, stanza.isIQRequest {
                            let answer =
                                stanza.child("ping", namespace: Namespace.ping) != nil
                                ? stanza.resultReply() : stanza.errorReply(StanzaError(.serviceUnavailable))
                            if let answer { try? connection.send(answer.serialized(parentNamespace: Namespace.client)) }
                            continue
                        }
                        events.put(event)
                        if case .stanza(let stanza) = event, stanza.name == "success",
                            stanza.namespace == saslNamespace
                        {
                            parser.reset()
                        }
                    }
                }
            } catch {}
            events.put(.streamEnd)
        }
    }

    /// Sends a stanza as it is (in the `jabber:client` namespace unless it names another).
    public func send(_ stanza: Element) throws {
        try connection.send(stanza.serialized(parentNamespace: Namespace.client))
    }

    /// Writes text as it is: what this library's serializer would write otherwise (a `'` left
    /// unescaped in text, as a client may send it).
    public func sendRaw(_ text: String) throws {
        try connection.send(text)
    }

    /// Sends an IQ get or set (an id is added when it has none) and returns the result or error stanza.
    public func request(_ iq: Element, timeout: Duration = .seconds(20)) async throws -> Element {
        var iq = iq
        let id =
            iq.stanzaID
            ?? nextID.withLock { next in
                next += 1
                return "c2s-\(next)"
            }
        iq[attribute: "id"] = id
        try send(iq)
        return try await Self.nextStanza(events, timeout: timeout, what: "the answer to IQ \(id)") { stanza in
            stanza.name == "iq" && stanza.stanzaID == id && (stanza.iqType == .result || stanza.iqType == .error)
        }
    }

    /// The next stanza (not an IQ answer) that `matches` accepts, e.g. a message.
    public func nextStanza(
        matching matches: @escaping @Sendable (Element) -> Bool = { _ in true },
        timeout: Duration = .seconds(5)
    ) async throws -> Element {
        try await Self.nextStanza(events, timeout: timeout, what: "a stanza from the server", matching: matches)
    }

    /// Turns on stream management with resumption (XEP-0198), so that `drop()` leaves a hibernated
    /// session behind, as a phone that lost its network does: the server queues stanzas to it and
    /// pushes for them.
    public func enableResumption(timeout: Duration = .seconds(5)) async throws {
        try connection.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>")
        let answer = try await Self.nextStanza(events, timeout: timeout, what: "stream management enabled") {
            $0.namespace == Self.streamManagementNamespace && ($0.name == "enabled" || $0.name == "failed")
        }
        guard answer.name == "enabled", answer[attribute: "resume"] == "true" || answer[attribute: "resume"] == "1"
        else {
            throw LoginError(
                description: "the server did not enable resumable stream management: \(answer.serialized())")
        }
    }

    static let streamManagementNamespace = "urn:xmpp:sm:3"

    /// Closes the socket without ending the stream: the connection is lost, not closed.
    public func drop() {
        connection.close()
    }

    /// Ends the stream cleanly: `</stream:stream>`, a short wait for the server's, then the socket.
    public func close(timeout: Duration = .seconds(2)) async {
        try? connection.send("</stream:stream>")
        _ = try? await events.take(matching: { $0 == .streamEnd }, timeout: timeout, what: "the server's stream end")
        connection.close()
    }

    // MARK: Conveniences

    /// An IQ get/set to `to` with one payload; the result's payload, or the error thrown as a StanzaError.
    /// Without `to`, the account itself answers (RFC 6120 §10.3.3), as for XEP-0357 enable.
    public func query(_ type: IQType, to: String?, payload: Element, timeout: Duration = .seconds(20)) async throws
        -> Element?
    {
        var iq = Element.iq(type: type, id: "", payload: payload, namespace: Namespace.client)
        iq[attribute: "id"] = nil
        iq[attribute: "to"] = to
        let answer = try await request(iq, timeout: timeout)
        if let error = StanzaError(stanza: answer) { throw error }
        return answer.elements.first
    }

    public func discoInfo(of entity: String, node: String? = nil) async throws -> DiscoInfo {
        let payload = Element("query", namespace: Namespace.discoInfo, ["node": node])
        guard let answer = try await query(.get, to: entity, payload: payload) else {
            throw LoginError(description: "an empty disco#info result from \(entity)")
        }
        return try DiscoInfo(element: answer)
    }

    public func discoItems(of entity: String, node: String? = nil) async throws -> DiscoItems {
        let payload = Element("query", namespace: Namespace.discoItems, ["node": node])
        guard let answer = try await query(.get, to: entity, payload: payload) else {
            throw LoginError(description: "an empty disco#items result from \(entity)")
        }
        return try DiscoItems(element: answer)
    }

    /// Runs one stage of a XEP-0050 command and returns the `<command/>` answer. After `previous` (the
    /// answer to the stage before) it sends, as a client must, that answer's sessionid and its form's
    /// hidden fields with `form`; `sessionID` overrides the id.
    public func executeCommand(
        on entity: String, node: String, action: AdHocAction = .execute, after previous: Element? = nil,
        sessionID: String? = nil, form: DataForm? = nil
    ) async throws -> Element {
        var command = Element(
            "command", namespace: Namespace.commands,
            ["node": node, "action": action.rawValue, "sessionid": sessionID ?? previous?[attribute: "sessionid"]])
        let hidden = previous?.hiddenFormFields ?? []
        if form != nil || !hidden.isEmpty {
            var submitted = form ?? DataForm(type: .submit)
            submitted.fields += hidden.filter { field in !submitted.fields.contains { $0.variable == field.variable } }
            command.append(submitted.element)
        }
        guard let answer = try await query(.set, to: entity, payload: command) else {
            throw LoginError(description: "an empty command result from \(entity)")
        }
        return answer
    }

    /// XEP-0357: asks the server to push to `service` with `node`, passing `publishOptions`.
    public func enablePush(service: String, node: String, publishOptions: DataForm? = nil) async throws {
        var enable = Element("enable", namespace: Namespace.push, ["jid": service, "node": node])
        if let publishOptions { enable.append(publishOptions.element) }
        _ = try await query(.set, to: nil, payload: enable)
    }

    /// XEP-0357: stops pushes to `service` (for one node, or all when `node` is nil).
    public func disablePush(service: String, node: String? = nil) async throws {
        _ = try await query(
            .set, to: nil,
            payload: Element("disable", namespace: Namespace.push, ["jid": service, "node": node]))
    }
}

extension Element {
    /// The hidden fields of this `<command/>` answer's form (its FORM_TYPE, the session's state), which
    /// a client sends back with the next stage's form, as XEP-0004 asks.
    public var hiddenFormFields: [DataForm.Field] {
        let form = child("x", namespace: Namespace.dataForms).flatMap { try? DataForm(element: $0) }
        return form?.fields.filter { $0.type == .hidden } ?? []
    }
}
