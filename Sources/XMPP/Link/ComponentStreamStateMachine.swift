public import XMLStream

/// The XEP-0114 stream as a pure state machine: bytes and parse events in, actions out.
///
/// It knows nothing of sockets or clocks, so every step of the handshake, and every way it can go
/// wrong, is tested one line at a time.
public struct ComponentStreamStateMachine: Sendable {
    public enum State: Sendable, Equatable {
        case idle
        case awaitingStreamHeader
        case awaitingHandshakeReply
        case ready
        case closed
    }

    public enum Action: Sendable, Equatable {
        /// Write this text to the socket.
        case send(String)
        /// The handshake succeeded: the component may send stanzas now.
        case ready
        /// A stanza for the component.
        case deliver(Element)
        /// The stream is over: write `farewell` (if any), close the socket, and reconnect per `failure`.
        case close(farewell: String?, failure: ComponentStreamFailure)
        case none
    }

    public private(set) var state: State = .idle
    public private(set) var streamID: String?
    private let componentJID: String
    private let secret: String

    public init(componentJID: String, secret: String) {
        self.componentJID = componentJID
        self.secret = secret
    }

    /// The socket is open: say who we are.
    public mutating func connected() -> Action {
        state = .awaitingStreamHeader
        return .send(
            "<?xml version='1.0'?><stream:stream xmlns='\(Namespace.componentAccept)' "
                + "xmlns:stream='\(Namespace.streams)' to='\(XMLEscaping.escaped(componentJID))'>")
    }

    public mutating func received(_ event: StreamEvent) -> Action {
        switch (state, event) {
        case (.awaitingStreamHeader, .streamStart(let header)):
            guard let id = header[attribute: "id"], !id.isEmpty else {
                return fail(.badFormat, "the server's stream header has no id")
            }
            streamID = id
            state = .awaitingHandshakeReply
            let digest = ComponentHandshake.digest(streamID: id, secret: secret)
            return .send("<handshake>\(digest)</handshake>")
        case (.awaitingHandshakeReply, .stanza(let stanza)) where stanza.name == "handshake":
            state = .ready
            return .ready
        case (_, .stanza(let stanza)) where stanza.name == "error" && stanza.namespace == Namespace.streams:
            state = .closed
            let error = StreamError(element: stanza) ?? StreamError(.undefinedCondition)
            return .close(farewell: "</stream:stream>", failure: .streamError(error))
        case (.ready, .stanza(let stanza)):
            return .deliver(stanza)
        case (.ready, .skippedStanza(let stanza, let reason)):
            // One stanza over a limit is refused on its own: the stream, and every other stanza, goes on.
            guard ["iq", "message", "presence"].contains(stanza.name), stanza.namespace == Namespace.componentAccept,
                let reply = stanza.errorReply(StanzaError(.policyViolation, text: reason.text))
            else { return .none }
            return .send(reply.serialized(parentNamespace: Namespace.componentAccept))
        case (_, .streamEnd):
            state = .closed
            return .close(farewell: "</stream:stream>", failure: .closedByPeer)
        case (.closed, _):
            return .none
        default:
            return fail(.notAuthorized, "the server sent \(event.summary) before the handshake completed")
        }
    }

    /// The bytes could not be read as XMPP: tell the server why, then close.
    public mutating func parseFailed(_ error: StreamParseError) -> Action {
        let condition = StreamError.Condition(rawValue: error.condition.rawValue)
        return fail(condition, error.text)
    }

    /// We are stopping: close the stream politely.
    public mutating func stop() -> Action {
        let wasOpen = state != .idle && state != .closed
        state = .closed
        return .close(farewell: wasOpen ? "</stream:stream>" : nil, failure: .stopped)
    }

    private mutating func fail(_ condition: StreamError.Condition, _ text: String) -> Action {
        state = .closed
        let error = StreamError(condition, text: text)
        return .close(
            farewell: error.element.serialized(parentNamespace: Namespace.componentAccept) + "</stream:stream>",
            failure: .protocolViolation(error))
    }
}

/// Why a component stream ended, and so how soon to try again.
public enum ComponentStreamFailure: Sendable, Equatable, CustomStringConvertible {
    /// The server sent a stream error (`not-authorized` for a wrong secret, `conflict` when another
    /// instance holds the JID, `host-unknown` for a JID the server does not know).
    case streamError(StreamError)
    /// We ended the stream because the server broke the protocol or sent unreadable XML.
    case protocolViolation(StreamError)
    case closedByPeer
    case connectionLost(String)
    case keepaliveTimeout
    case handshakeTimeout
    case stopped

    /// A rejection will not heal by retrying quickly: wait longer so the server's log is not flooded.
    public var isRejection: Bool {
        if case .streamError(let error) = self {
            return [.notAuthorized, .hostUnknown].contains(error.condition)
        }
        return false
    }

    /// Another instance holds the component JID: this one stands by (ReconnectSchedule).
    public var isConflict: Bool {
        if case .streamError(let error) = self { return error.condition == .conflict }
        return false
    }

    public var description: String {
        switch self {
        case .streamError(let error): "the server ended the stream: \(error)"
        case .protocolViolation(let error): "we ended the stream: \(error)"
        case .closedByPeer: "the server closed the stream"
        case .connectionLost(let reason): "the connection was lost: \(reason)"
        case .keepaliveTimeout: "the server did not answer a keepalive ping"
        case .handshakeTimeout: "the server did not complete the handshake in time"
        case .stopped: "stopped"
        }
    }
}

extension StreamEvent {
    var summary: String {
        switch self {
        case .streamStart: "a stream header"
        case .stanza(let stanza): "<\(stanza.name)>"
        case .skippedStanza(let stanza, _): "<\(stanza.name)> over a stanza limit"
        case .streamEnd: "the end of the stream"
        }
    }
}
