import Testing
import XMLStream
import XMPP

@Suite struct ComponentStreamStateMachineTests {
    private func machine() -> ComponentStreamStateMachine {
        ComponentStreamStateMachine(componentJID: "apush.example.org", secret: "s3cret")
    }

    private func header(id: String?) -> StreamEvent {
        .streamStart(Element("stream", namespace: Namespace.streams, ["from": "apush.example.org", "id": id]))
    }

    private func streamError(_ condition: StreamError.Condition) -> StreamEvent {
        .stanza(StreamError(condition).element)
    }

    /// A machine that has completed the handshake.
    private func ready() -> ComponentStreamStateMachine {
        var machine = machine()
        _ = machine.connected()
        _ = machine.received(header(id: "abc"))
        _ = machine.received(.stanza(Element("handshake", namespace: Namespace.componentAccept)))
        return machine
    }

    @Test func headerHandshakeReady() {
        var machine = machine()
        #expect(machine.state == .idle)
        #expect(
            machine.connected()
                == .send(
                    "<?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' "
                        + "xmlns:stream='http://etherx.jabber.org/streams' to='apush.example.org'>"))
        #expect(machine.state == .awaitingStreamHeader)
        let digest = ComponentHandshake.digest(streamID: "abc", secret: "s3cret")
        #expect(machine.received(header(id: "abc")) == .send("<handshake>\(digest)</handshake>"))
        #expect(machine.streamID == "abc")
        #expect(machine.state == .awaitingHandshakeReply)
        #expect(machine.received(.stanza(Element("handshake", namespace: Namespace.componentAccept))) == .ready)
        #expect(machine.state == .ready)
    }

    @Test func stanzasAreDeliveredOnceReady() {
        var machine = ready()
        let message = Element.message(from: try! JID("example.org"), to: try! JID("apush.example.org"))
        #expect(machine.received(.stanza(message)) == .deliver(message))
        #expect(machine.state == .ready)
    }

    @Test func aSkippedStanzaIsRefusedAloneAndTheStreamGoesOn() {
        var machine = ready()
        let head = Element(
            "iq", namespace: Namespace.componentAccept,
            ["type": "set", "id": "big", "from": "example.org", "to": "apush.example.org/x"])
        let reason = StreamParseError(condition: .policyViolation, text: "a stanza exceeds 262144 bytes")
        #expect(
            machine.received(.skippedStanza(head, reason: reason))
                == .send(
                    "<iq type='error' id='big' from='apush.example.org/x' to='example.org'><error type='modify'>"
                        + "<policy-violation xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>"
                        + "<text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>a stanza exceeds 262144 bytes</text>"
                        + "</error></iq>"))
        #expect(machine.state == .ready)
        let message = Element.message(from: try! JID("example.org"), to: try! JID("apush.example.org"))
        #expect(machine.received(.stanza(message)) == .deliver(message))
    }

    @Test(arguments: [
        Element("iq", namespace: Namespace.componentAccept, ["type": "result", "id": "r"]),
        Element("message", namespace: Namespace.componentAccept, ["type": "error", "id": "e"]),
        Element("error", namespace: Namespace.streams),
        Element("handshake", namespace: Namespace.componentAccept),
    ])
    func aSkippedResponseErrorOrStreamElementGetsNoAnswer(head: Element) {
        var machine = ready()
        let reason = StreamParseError(condition: .policyViolation, text: "too big")
        #expect(machine.received(.skippedStanza(head, reason: reason)) == .none)
        #expect(machine.state == .ready)
    }

    @Test func aSkippedStanzaBeforeTheHandshakeEndsTheStream() {
        var machine = machine()
        _ = machine.connected()
        _ = machine.received(header(id: "abc"))
        let reason = StreamParseError(condition: .policyViolation, text: "too big")
        guard
            case .close(_, .protocolViolation) = machine.received(
                .skippedStanza(Element("handshake", namespace: Namespace.componentAccept), reason: reason))
        else {
            Issue.record("expected the stream to end")
            return
        }
    }

    @Test(arguments: [nil, ""])
    func aHeaderWithoutIDIsABadFormat(id: String?) throws {
        var machine = machine()
        _ = machine.connected()
        guard case .close(let farewell, .protocolViolation(let error)) = machine.received(header(id: id)) else {
            Issue.record("expected a protocol violation")
            return
        }
        #expect(error.condition == .badFormat)
        #expect(farewell?.contains("<bad-format xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>") == true)
        #expect(farewell?.hasSuffix("</stream:stream>") == true)
        #expect(machine.state == .closed)
    }

    @Test(arguments: [StreamError.Condition.notAuthorized, .conflict, .hostUnknown])
    func aRejectionDuringTheHandshakeClosesAsARejection(condition: StreamError.Condition) {
        var machine = machine()
        _ = machine.connected()
        _ = machine.received(header(id: "abc"))
        let action = machine.received(streamError(condition))
        #expect(action == .close(farewell: "</stream:stream>", failure: .streamError(StreamError(condition))))
        let failure = ComponentStreamFailure.streamError(StreamError(condition))
        // A conflict is no rejection: another instance holds the JID, and this one stands by.
        #expect(failure.isRejection == (condition != .conflict))
        #expect(failure.isConflict == (condition == .conflict))
        #expect(machine.state == .closed)
    }

    @Test func otherStreamErrorsAreNoRejection() {
        var machine = ready()
        let action = machine.received(streamError(.systemShutdown))
        #expect(action == .close(farewell: "</stream:stream>", failure: .streamError(StreamError(.systemShutdown))))
        #expect(!ComponentStreamFailure.streamError(StreamError(.systemShutdown)).isRejection)
        #expect(!ComponentStreamFailure.closedByPeer.isRejection)
    }

    @Test func aStanzaBeforeTheHandshakeCompletesEndsTheStream() {
        var machine = machine()
        _ = machine.connected()
        _ = machine.received(header(id: "abc"))
        let message = Element.message(to: try! JID("apush.example.org"))
        guard case .close(_, .protocolViolation(let error)) = machine.received(.stanza(message)) else {
            Issue.record("expected a protocol violation")
            return
        }
        #expect(error.condition == .notAuthorized)
        #expect(machine.state == .closed)
    }

    @Test func aStanzaBeforeTheHeaderEndsTheStream() {
        var machine = machine()
        _ = machine.connected()
        guard case .close(_, .protocolViolation) = machine.received(.stanza(Element("handshake"))) else {
            Issue.record("expected a protocol violation")
            return
        }
    }

    @Test func theServerEndingTheStreamIsAnsweredAndClosed() {
        var machine = ready()
        #expect(machine.received(.streamEnd) == .close(farewell: "</stream:stream>", failure: .closedByPeer))
        #expect(machine.state == .closed)
        #expect(machine.received(.stanza(Element("message"))) == .none, "nothing is delivered after the close")
    }

    @Test(arguments: [
        (StreamParseError.Condition.notWellFormed, StreamError.Condition.notWellFormed),
        (.policyViolation, .policyViolation),
        (.restrictedXML, .restrictedXML),
        (.invalidNamespace, .invalidNamespace),
    ])
    func unreadableInputIsAnsweredWithOurStreamError(
        parse: StreamParseError.Condition,
        expected: StreamError.Condition
    ) {
        var machine = ready()
        let action = machine.parseFailed(StreamParseError(condition: parse, text: "bad input"))
        let error = StreamError(expected, text: "bad input")
        #expect(
            action
                == .close(
                    farewell: error.element.serialized(parentNamespace: Namespace.componentAccept) + "</stream:stream>",
                    failure: .protocolViolation(error)))
        #expect(machine.state == .closed)
    }

    @Test func stoppingAnOpenStreamSaysGoodbye() {
        var machine = ready()
        #expect(machine.stop() == .close(farewell: "</stream:stream>", failure: .stopped))
        #expect(machine.state == .closed)
    }

    @Test func stoppingBeforeConnectingOrAfterClosingSendsNothing() {
        var idle = machine()
        #expect(idle.stop() == .close(farewell: nil, failure: .stopped))
        var closed = ready()
        _ = closed.received(.streamEnd)
        #expect(closed.stop() == .close(farewell: nil, failure: .stopped))
    }
}
