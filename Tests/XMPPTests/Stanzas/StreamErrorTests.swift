import Testing
import XMLStream
import XMPP

@Suite struct StreamErrorTests {
    static let rfc6120Conditions = [
        "bad-format", "bad-namespace-prefix", "conflict", "connection-timeout", "host-gone", "host-unknown",
        "improper-addressing", "internal-server-error", "invalid-from", "invalid-namespace", "invalid-xml",
        "not-authorized", "not-well-formed", "policy-violation", "remote-connection-failed", "reset",
        "resource-constraint", "restricted-xml", "see-other-host", "system-shutdown", "undefined-condition",
        "unsupported-encoding", "unsupported-feature", "unsupported-stanza-type", "unsupported-version",
    ]

    @Test func definesEveryRFC6120Condition() {
        #expect(StreamError.Condition.defined == Set(Self.rfc6120Conditions.map(StreamError.Condition.init(rawValue:))))
    }

    @Test(arguments: rfc6120Conditions)
    func roundTripsEachCondition(name: String) throws {
        let error = StreamError(StreamError.Condition(rawValue: name), text: "why")
        let parsed = try #require(StreamError(element: error.element))
        #expect(parsed == error)
    }

    @Test func writesStreamErrorInTheStreamsNamespace() {
        let error = StreamError(.notAuthorized, text: "bad secret")
        #expect(
            error.element.serialized(parentNamespace: Namespace.componentAccept)
                == "<error xmlns='http://etherx.jabber.org/streams'><not-authorized xmlns='urn:ietf:params:xml:ns:xmpp-streams'/>"
                + "<text xmlns='urn:ietf:params:xml:ns:xmpp-streams'>bad secret</text></error>")
    }

    @Test func carriesTheOtherHostAndApplicationCondition() throws {
        let error = StreamError(
            .seeOtherHost, otherHost: "[2001:db8::1]:5222",
            applicationCondition: Element("moved", namespace: "urn:example"))
        #expect(error.element.elements[0].text == "[2001:db8::1]:5222")
        #expect(StreamError(element: error.element) == error)
    }

    @Test func readsWhatAServerSends() throws {
        // <stream:error><host-unknown xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>
        let wire = Element(
            "error", namespace: Namespace.streams,
            children: [.element(Element("host-unknown", namespace: Namespace.streamErrors))])
        #expect(StreamError(element: wire) == StreamError(.hostUnknown))
        let bare = try #require(StreamError(element: Element("error", namespace: Namespace.streams)))
        #expect(bare.condition == .undefinedCondition)
    }

    @Test func ignoresOtherElements() {
        #expect(StreamError(element: Element("error", namespace: Namespace.componentAccept)) == nil)
        #expect(StreamError(element: Element("features", namespace: Namespace.streams)) == nil)
    }
}
