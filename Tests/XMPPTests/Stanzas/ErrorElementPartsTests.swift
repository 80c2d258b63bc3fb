import Testing
import XMLStream

@testable import XMPP

@Suite struct ErrorElementPartsTests {
    @Test func readsConditionItsTextTheTextAndTheApplicationCondition() throws {
        let error = try Element.parse(
            """
            <error xmlns='jabber:client' type='modify'><redirect xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>xmpp:b@x</redirect>\
            <text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>moved</text><too-many xmlns='urn:example'/><second xmlns='urn:example'/></error>
            """)
        let parts = ErrorElementParts(error, conditionNamespace: Namespace.stanzaErrors)
        #expect(parts.condition == "redirect")
        #expect(parts.conditionText == "xmpp:b@x")
        #expect(parts.text == "moved")
        #expect(parts.applicationCondition?.name == "too-many")
    }

    @Test func elementsOfAnotherErrorsNamespaceAreNotTheCondition() throws {
        let error = try Element.parse(
            "<error xmlns='jabber:client'><conflict xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></error>")
        let parts = ErrorElementParts(error, conditionNamespace: Namespace.stanzaErrors)
        #expect(parts.condition == nil)
        #expect(parts.applicationCondition?.name == "conflict")
    }
}
