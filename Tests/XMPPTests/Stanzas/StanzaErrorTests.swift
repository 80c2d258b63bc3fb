import Testing
import XMLStream
import XMPP

@Suite struct StanzaErrorTests {
    /// RFC 6120 §8.3.3, each condition with the type its example uses.
    @Test(
        arguments: [
            ("bad-request", StanzaError.ErrorType.modify), ("conflict", .cancel), ("feature-not-implemented", .cancel),
            ("forbidden", .auth), ("gone", .cancel), ("internal-server-error", .cancel), ("item-not-found", .cancel),
            ("jid-malformed", .modify), ("not-acceptable", .modify), ("not-allowed", .cancel),
            ("not-authorized", .auth), ("policy-violation", .modify), ("recipient-unavailable", .wait),
            ("redirect", .modify), ("registration-required", .auth), ("remote-server-not-found", .cancel),
            ("remote-server-timeout", .wait), ("resource-constraint", .wait), ("service-unavailable", .cancel),
            ("subscription-required", .auth), ("undefined-condition", .modify), ("unexpected-request", .wait),
        ] as [(String, StanzaError.ErrorType)])
    func everyDefinedConditionHasItsDefaultType(name: String, type: StanzaError.ErrorType) {
        let condition = StanzaError.Condition(rawValue: name)
        #expect(StanzaError.Condition.defined[condition] == type)
        #expect(StanzaError(condition).type == type)
    }

    @Test func definesAllTwentyTwoConditions() {
        #expect(StanzaError.Condition.defined.count == 22)
        #expect(StanzaError.Condition(rawValue: "x-unknown").defaultType == .cancel)
    }

    @Test func writesTheErrorChild() {
        let error = StanzaError(.resourceConstraint, text: "try later")
        #expect(
            error.element.serialized(parentNamespace: Namespace.componentAccept)
                == "<error type='wait'><resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>"
                + "<text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>try later</text></error>")
        let redirect = StanzaError(
            .redirect, type: .cancel, alternateAddress: "xmpp:other@example.com",
            applicationCondition: Element("too-many", namespace: "urn:example:errors"),
            by: "apush.localhost")
        #expect(
            redirect.element.serialized()
                == "<error type='cancel' by='apush.localhost'><redirect xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>"
                + "xmpp:other@example.com</redirect><too-many xmlns='urn:example:errors'/></error>")
    }

    @Test func readsTheCapturedEjabberdErrorReply() throws {
        let error = try #require(StanzaError(stanza: Fixtures.ejabberdErrorReply))
        #expect(error == StanzaError(.resourceConstraint, type: .wait))
    }

    @Test func roundTripsThroughAnErrorStanza() throws {
        let original = StanzaError(
            .notAcceptable, type: .modify, text: "bad key",
            applicationCondition: Element("invalid-options", namespace: Namespace.pubsubErrors),
            by: "apush.localhost")
        let request = Fixtures.prosodyStockPublish
        let reply = try #require(request.errorReply(original))
        #expect(StanzaError(stanza: reply) == original)
        #expect(StanzaError(errorElement: original.element) == original)
        let gone = StanzaError(.gone, alternateAddress: "xmpp:new@example.com")
        #expect(StanzaError(errorElement: gone.element) == gone)
    }

    @Test func readsSloppyErrorsLeniently() throws {
        let untyped = Element(
            "error", children: [.element(Element("item-not-found", namespace: Namespace.stanzaErrors))])
        #expect(StanzaError(errorElement: untyped)?.type == .cancel)
        let bogusType = Element(
            "error", ["type": "later"],
            children: [Element("conflict", namespace: Namespace.stanzaErrors)])
        #expect(StanzaError(errorElement: bogusType)?.type == .cancel)
        let empty = try #require(StanzaError(errorElement: Element("error", ["type": "wait"])))
        #expect(empty.condition == .undefinedCondition)
        #expect(empty.type == .wait)
    }

    @Test func readsNothingFromOtherElements() {
        #expect(StanzaError(errorElement: Element("query")) == nil)
        #expect(StanzaError(stanza: Fixtures.prosodyStockPublish) == nil)
        // type=error without an <error/> child.
        #expect(StanzaError(stanza: Element("iq", namespace: Namespace.client, ["type": "error"])) == nil)
        // An <error/> in another namespace is not the stanza's error.
        let foreign = Element(
            "iq", namespace: Namespace.client, ["type": "error"],
            children: [Element("error", namespace: "urn:other")])
        #expect(StanzaError(stanza: foreign) == nil)
    }
}
