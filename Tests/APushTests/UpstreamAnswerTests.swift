import Testing
import XMLStream
import XMPP
@testable import APush

@Suite struct UpstreamAnswerTests {
    static func answer(type: String, condition: String) throws -> Element {
        try Element.parse("""
            <iq type='error' from='push.example.org' id='1'><error type='\(type)'>\
            <\(condition) xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>
            """)
    }

    @Test func aResultIsAccepted() throws {
        #expect(UpstreamOutcome(answer: try Element.parse("<iq type='result' id='1'/>")) == .accepted)
    }

    @Test(arguments: [
        ("cancel", "item-not-found", UpstreamOutcome.deadToken),
        ("cancel", "gone", .deadToken),
        ("cancel", "remote-server-not-found", .retry(reason: "cancel/remote-server-not-found")),
        ("cancel", "remote-server-timeout", .retry(reason: "cancel/remote-server-timeout")),
        ("wait", "resource-constraint", .retry(reason: "wait/resource-constraint")),
        ("wait", "remote-server-timeout", .retry(reason: "wait/remote-server-timeout")),
        ("modify", "bad-request", .rejected(reason: "modify/bad-request")),
        ("auth", "forbidden", .rejected(reason: "auth/forbidden")),
    ])
    func anErrorMapsByItsType(_ type: String, condition: String, expected: UpstreamOutcome) throws {
        #expect(UpstreamOutcome(answer: try Self.answer(type: type, condition: condition)) == expected)
    }

    @Test func anErrorWithoutAnErrorElementIsADeadToken() throws {
        #expect(UpstreamOutcome(answer: try Element.parse("<iq type='error' id='1'/>")) == .deadToken)
    }

    @Test(arguments: [
        (ComponentLinkError.timedOut, "wait/timeout"),
        (.disconnected, "wait/link-down"),
        (.notConnected, "wait/link-down"),
    ])
    func aTimeoutOrALostLinkIsRetried(_ failure: ComponentLinkError, reason: String) {
        #expect(UpstreamOutcome(failure: failure) == .retry(reason: reason))
    }

    @Test(arguments: [
        (ServerAnswer.accepted, nil, nil, "result"),
        (.gone, StanzaError.ErrorType.cancel, StanzaError.Condition.itemNotFound, "cancel"),
        (.wait(.resourceConstraint), .wait, .resourceConstraint, "wait"),
        (.wait(.remoteServerTimeout), .wait, .remoteServerTimeout, "wait"),
    ])
    func theServerIsAnsweredAsTheProtocolSays(_ answer: ServerAnswer, type: StanzaError.ErrorType?,
                                              condition: StanzaError.Condition?, statistics: String) {
        #expect(answer.error?.type == type)
        #expect(answer.error?.condition == condition)
        #expect(answer.statisticsName == statistics)
    }
}
