import Testing
import XMLStream
import XMPP

@Suite struct StanzaTests {
    @Test func buildsIQs() throws {
        let iq = Element.iq(
            type: .get, id: "p1", from: try JID("apush.localhost"), to: try JID("localhost"),
            payload: Element("ping", namespace: Namespace.ping))
        #expect(
            iq.serialized(parentNamespace: Namespace.componentAccept)
                == "<iq type='get' id='p1' from='apush.localhost' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>")
        #expect(iq.namespace == Namespace.componentAccept)
        let bare = Element.iq(type: .result, id: "r", namespace: Namespace.client)
        #expect(bare.serialized() == "<iq xmlns='jabber:client' type='result' id='r'/>")
    }

    @Test func buildsMessages() throws {
        let message = Element.message(
            type: .chat, id: "m1", to: try JID("alice@localhost"),
            children: [Element("body", namespace: Namespace.componentAccept, [:], text: "hi")])
        #expect(
            message.serialized(parentNamespace: Namespace.componentAccept)
                == "<message type='chat' id='m1' to='alice@localhost'><body>hi</body></message>")
        #expect(Element.message().serialized(parentNamespace: Namespace.componentAccept) == "<message/>")
    }

    @Test func readsAddressingOfCapturedStanzas() throws {
        let publish = Fixtures.prosodyStockPublish
        #expect(publish.stanzaID == "20ab3be121224fa65a880106ccfceb8b604b04115231312b10068684274d8999")
        #expect(publish.from == (try JID("localhost")))
        #expect(publish.to == (try JID("apush.localhost")))
        #expect(publish.fromString == "localhost")
        #expect(publish.stanzaType == "set")
        #expect(publish.iqType == .set)
        #expect(publish.isIQRequest)
        #expect(!publish.isErrorStanza)

        #expect(Fixtures.ejabberdDiscoQuery.iqType == .get)
        #expect(Fixtures.ejabberdDiscoReply.iqType == .result)
        #expect(!Fixtures.ejabberdDiscoReply.isIQRequest)
        #expect(Fixtures.ejabberdErrorReply.isErrorStanza)
        let registered = Fixtures.prosodyBridgeRegistered
        #expect(registered.iqType == nil)
        #expect(!registered.isIQRequest)
        #expect(registered.stanzaID == nil)
    }

    @Test func invalidOrMissingAddressesReadAsNil() {
        let stanza = Element("iq", namespace: Namespace.componentAccept, ["type": "fetch", "from": "a@b@c"])
        #expect(stanza.from == nil)
        #expect(stanza.fromString == "a@b@c")
        #expect(stanza.to == nil)
        #expect(stanza.toString == nil)
        #expect(stanza.iqType == nil)
        #expect(!stanza.isIQRequest)
    }

    @Test func answersARequestWithAResult() throws {
        let query = Fixtures.ejabberdDiscoQuery
        let payload = Element(
            "query", namespace: Namespace.discoInfo, ["node": "urn:xmpp:delegation:1::urn:xmpp:push:0"])
        let reply = try #require(query.resultReply(payload: payload))
        #expect(
            reply.serialized(parentNamespace: Namespace.componentAccept)
                == "<iq type='result' id='rr-1795967871984-16053748326798559298-PrJ0LdfrYB687NlSWm8cY33QWqc=-95942708'"
                + " from='apush.localhost' to='localhost'><query xmlns='http://jabber.org/protocol/disco#info'"
                + " node='urn:xmpp:delegation:1::urn:xmpp:push:0'/></iq>")
        #expect(reply.namespace == Namespace.componentAccept)
        #expect(Fixtures.prosodyStockPublish.resultReply()?.children.isEmpty == true)
    }

    @Test func onlyRequestsGetResults() {
        #expect(Fixtures.ejabberdDiscoReply.resultReply() == nil)
        #expect(Fixtures.ejabberdErrorReply.resultReply() == nil)
        #expect(Fixtures.prosodyBridgeRegistered.resultReply() == nil)
    }

    @Test func answersWithAnErrorWithoutEchoingThePayload() throws {
        let reply = try #require(Fixtures.prosodyStockPublish.errorReply(StanzaError(.resourceConstraint)))
        #expect(
            reply.serialized(parentNamespace: Namespace.componentAccept)
                == "<iq type='error' id='20ab3be121224fa65a880106ccfceb8b604b04115231312b10068684274d8999'"
                + " from='apush.localhost' to='localhost'><error type='wait'>"
                + "<resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>")
        // The <error/> is in the stanza's namespace, so queries and readers find it.
        #expect(reply.findString("error@type") == "wait")
        // The shape ejabberd accepted from the component (ejabberd-23.01-stock.md).
        #expect(StanzaError(stanza: reply) == StanzaError(stanza: Fixtures.ejabberdErrorReply))
    }

    @Test func anErrorThatCarriesAPayloadEchoesItBeforeTheError() throws {
        let echoed = Element("registered", namespace: "urn:example:echo", ["account": "alice@localhost"])
        let error = StanzaError(.notAcceptable, text: "why", payload: echoed)
        let reply = try #require(Fixtures.prosodyBridgeRegistered.errorReply(error))
        #expect(reply.elements.map(\.name) == ["registered", "error"])
        #expect(reply.elements.first == echoed)
        #expect(StanzaError(stanza: reply)?.condition == .notAcceptable)
        // The `<error/>` element alone never holds it.
        #expect(error.element.elements.map(\.name) == ["not-acceptable", "text"])
    }

    @Test func answersMessagesWithErrorsToo() throws {
        let reply = try #require(Fixtures.prosodyBridgeRegistered.errorReply(StanzaError(.notAllowed)))
        #expect(reply.name == "message")
        #expect(reply.stanzaType == "error")
        #expect(reply.toString == "localhost")
        #expect(reply.fromString == "apush.localhost")
        #expect(reply.stanzaID == nil)
    }

    @Test func neverAnswersAnErrorOrAResponseWithAnError() {
        #expect(Fixtures.ejabberdErrorReply.errorReply(StanzaError(.badRequest)) == nil)
        #expect(Fixtures.ejabberdDiscoReply.errorReply(StanzaError(.badRequest)) == nil)
        let errorMessage = Element("message", namespace: Namespace.componentAccept, ["type": "error"])
        #expect(errorMessage.errorReply(StanzaError(.badRequest)) == nil)
    }
}
