import Foundation
import Synchronization
public import XMLStream
import Sockets
public import XMPP

/// The XMPP server's side of XEP-0114, for testing a component without Prosody or ejabberd.
///
/// It listens on 127.0.0.1 (a kernel-chosen port), answers the component's stream header with a fresh
/// id, checks the `<handshake/>` digest, and then lets a test send stanzas, read what the component
/// sent, make requests, feed it raw bytes, and cut the connection. Only the latest authenticated
/// connection is "current"; a new one replaces it, as a real server's does.
public final class StandInComponentServer: Sendable {
    /// How the stand-in answers a handshake with the right digest. A wrong digest is always refused
    /// with `not-authorized`.
    public enum HandshakeAnswer: Sendable, Equatable {
        case accept
        /// Another instance holds the JID (`<conflict/>`).
        case conflict
    }

    public let port: UInt16
    public let secret: String
    /// The component JID the stand-in serves as (the `from` of its stream header).
    public let componentJID: String

    private let state = Mutex(State())
    private let stanzas = Mailbox<Element>(name: "a stanza from the component")
    private let answers = Mailbox<Element>(name: "an answer from the component")
    private let connected = Mailbox<Int>(name: "an authenticated connection")
    private let listener = Mutex<TCPListener?>(nil)

    private struct State {
        var connectionCount = 0
        var current: TCPConnection?
        var handshake = HandshakeAnswer.accept
        var answersPings = true
        var streamErrors: [StreamError] = []
        var nextID = 0
        var open: [TCPConnection] = []
        var handler: (@Sendable (Element) -> Void)?
        var responder: (@Sendable (Element) -> Element?)?
    }

    /// Starts listening at once.
    public init(componentJID: String = "apush.localhost", secret: String = "stand-in-secret") throws {
        self.componentJID = componentJID
        self.secret = secret
        // Weak, so that the listener's thread does not keep the stand-in alive.
        let box = Mutex(WeakReference<StandInComponentServer>())
        let listener = try TCPListener { connection in
            box.withLock { $0.value }?.serve(connection)
        }
        port = listener.port
        self.listener.withLock { $0 = listener }
        box.withLock { $0.value = self }
    }

    /// TCP connections accepted so far, authenticated or not.
    public var connectionCount: Int { state.withLock { $0.connectionCount } }

    /// The `<stream:error/>`s the component sent, oldest first.
    public var streamErrors: [StreamError] { state.withLock { $0.streamErrors } }

    /// The latest stream error the component sent, if any.
    public var streamError: StreamError? { streamErrors.last }

    /// Whether there is an authenticated connection now.
    public var isConnected: Bool { state.withLock { $0.current != nil } }

    /// How the next handshakes are answered.
    public func script(handshake: HandshakeAnswer) {
        state.withLock { $0.handshake = handshake }
    }

    /// Whether the stand-in answers the component's keepalive pings itself (as a real server does).
    /// When off, pings are handed to `nextStanza` like any other stanza, and go unanswered.
    public func answerPings(_ answer: Bool) {
        state.withLock { $0.answersPings = answer }
    }

    /// When set, every stanza the component sends (pings excepted) goes to `handler`, on the reading
    /// thread, instead of being kept for `nextStanza` and `request`: for a load generator, which must
    /// not keep a hundred thousand answers. Nil keeps them again.
    public func handleEveryStanza(_ handler: (@Sendable (Element) -> Void)?) {
        state.withLock { $0.handler = handler }
    }

    /// When set, each IQ request the component sends (pings excepted) that `responder` returns an
    /// answer for is answered with it at once, as a server module would answer it.
    public func answerRequests(_ responder: (@Sendable (Element) -> Element?)?) {
        state.withLock { $0.responder = responder }
    }

    /// Waits until a connection completes the handshake (or takes one that did since the last wait).
    /// Returns the connection's number (1 for the first TCP connection).
    @discardableResult
    public func waitForConnection(timeout: Duration = .seconds(30)) async throws -> Int {
        try await connected.take(timeout: timeout)
    }

    /// Sends a stanza to the component over the current connection.
    public func send(_ stanza: Element) throws {
        try sendRaw(stanza.serialized(parentNamespace: Namespace.componentAccept))
    }

    /// Writes text as it is, e.g. malformed or oversized XML.
    public func sendRaw(_ text: String) throws {
        guard let current = state.withLock({ $0.current }) else { throw ComponentLinkError.notConnected }
        try current.send(text)
    }

    /// The next stanza the component sent (IQ answers to `request` excepted). The default bounds here are
    /// for liveness only (a loaded machine running the suites under a sanitizer is slow); a test that
    /// expects nothing passes a short one.
    public func nextStanza(timeout: Duration = .seconds(20)) async throws -> Element {
        try await stanzas.take(timeout: timeout)
    }

    /// The next stanza the component sent that `matches` accepts.
    public func nextStanza(
        matching matches: @escaping @Sendable (Element) -> Bool,
        timeout: Duration = .seconds(20)
    ) async throws -> Element {
        try await stanzas.take(matching: matches, timeout: timeout)
    }

    /// Sends an IQ get or set (an id is added when it has none) and returns the component's result or error.
    /// It goes on the connection that completed its handshake last, once there is one, and again on
    /// the next one if its connection is replaced before an answer comes (a component gives up a
    /// handshake that a loaded machine was slow to finish, and connects again): the link failed, not
    /// the component's answer.
    public func request(_ iq: Element, timeout: Duration = .seconds(60)) async throws -> Element {
        var iq = iq
        let id =
            iq.stanzaID
            ?? state.withLock { state in
                state.nextID += 1
                return "standin-\(state.nextID)"
            }
        iq[attribute: "id"] = id
        let text = iq.serialized(parentNamespace: Namespace.componentAccept)
        let what = "the component's answer to IQ \(id)"
        let deadline = ContinuousClock.now + timeout
        var sentOn: TCPConnection?
        while true {
            if let current = state.withLock({ $0.current }), current !== sentOn {
                try current.send(text)
                sentOn = current
            }
            do {
                let slice = min(.seconds(1), ContinuousClock.now.duration(to: deadline))
                return try await answers.take(matching: { $0.stanzaID == id }, timeout: slice, what: what)
            } catch is TimedOut where ContinuousClock.now < deadline {
                continue
            } catch is TimedOut {
                throw TimedOut(waitingFor: what, after: timeout)
            }
        }
    }

    /// Closes the current connection abruptly: no stream error, no `</stream:stream>`.
    public func dropConnection() {
        let current = state.withLock { state in
            defer { state.current = nil }
            return state.current
        }
        current?.close()
    }

    /// Stops listening and closes every connection.
    public func stop() {
        listener.withLock { listener in
            listener?.close()
            listener = nil
        }
        let open = state.withLock { state in
            defer {
                state.open = []
                state.current = nil
            }
            return state.open
        }
        for connection in open { connection.close() }
    }

    deinit {
        stop()
    }

    private func serve(_ connection: TCPConnection) {
        let number = state.withLock { state in
            state.connectionCount += 1
            state.open.append(connection)
            return state.connectionCount
        }
        Task { await self.session(connection, number: number) }
    }

    private func session(_ connection: TCPConnection, number: Int) async {
        let parser = StreamParser()
        var streamID: String?
        var authenticated = false
        defer {
            state.withLock { state in
                if state.current === connection { state.current = nil }
                state.open.removeAll { $0 === connection }
            }
            connection.close()
        }
        func refuse(_ condition: StreamError.Condition) {
            let error = StreamError(condition).element.serialized(parentNamespace: Namespace.componentAccept)
            try? connection.send(error + "</stream:stream>")
        }
        do {
            for try await chunk in connection.incoming() {
                let events: [StreamEvent]
                do {
                    events = try parser.feed(chunk)
                } catch {
                    refuse(StreamError.Condition(rawValue: error.condition.rawValue))
                    return
                }
                for event in events {
                    switch event {
                    case .streamStart:
                        let id = String(UInt64.random(in: .min ... .max), radix: 16)
                        streamID = id
                        try connection.send(
                            "<?xml version='1.0'?><stream:stream xmlns:stream='\(Namespace.streams)' "
                                + "xmlns='\(Namespace.componentAccept)' from='\(XMLEscaping.escaped(componentJID))' "
                                + "id='\(id)'>")
                    case .stanza(let stanza) where stanza.name == "error" && stanza.namespace == Namespace.streams:
                        let error = StreamError(element: stanza) ?? StreamError(.undefinedCondition)
                        state.withLock { $0.streamErrors.append(error) }
                    case .stanza(let stanza) where !authenticated:
                        guard stanza.name == "handshake", let streamID,
                            stanza.text == ComponentHandshake.digest(streamID: streamID, secret: secret)
                        else {
                            refuse(.notAuthorized)
                            return
                        }
                        if state.withLock({ $0.handshake }) == .conflict {
                            refuse(.conflict)
                            return
                        }
                        authenticated = true
                        try connection.send("<handshake/>")
                        state.withLock { $0.current = connection }
                        connected.put(number)
                    case .stanza(let stanza):
                        receive(stanza, on: connection)
                    case .skippedStanza(_, let reason):
                        // A stand-in only checks the component: anything it sends over a limit is a fault.
                        refuse(StreamError.Condition(rawValue: reason.condition.rawValue))
                        return
                    case .streamEnd:
                        try? connection.send("</stream:stream>")
                        return
                    }
                }
            }
        } catch {
            return
        }
    }

    private func receive(_ stanza: Element, on connection: TCPConnection) {
        let (answersPings, handler, responder) = state.withLock { ($0.answersPings, $0.handler, $0.responder) }
        if stanza.isIQRequest, stanza.child("ping", namespace: Namespace.ping) != nil, answersPings,
            let pong = stanza.resultReply()
        {
            try? connection.send(pong.serialized(parentNamespace: Namespace.componentAccept))
        } else if stanza.isIQRequest, let answer = responder?(stanza) {
            try? connection.send(answer.serialized(parentNamespace: Namespace.componentAccept))
        } else if let handler {
            handler(stanza)
        } else if stanza.name == "iq", let type = stanza.iqType, type == .result || type == .error {
            answers.put(stanza)
        } else {
            stanzas.put(stanza)
        }
    }
}

struct WeakReference<Object: AnyObject> {
    weak var value: Object?
}
