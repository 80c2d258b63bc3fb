import Testing
import XMLStream
import XMPP

@testable import APush

@Suite struct UpstreamOutcomeTests {
    static func answer(type: String, condition: String) throws -> Element {
        try Element.parse(
            """
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
        ("cancel", "remote-server-not-found", .retry(.unreachable(.remoteServerNotFound))),
        ("cancel", "remote-server-timeout", .retry(.unreachable(.remoteServerTimeout))),
        ("wait", "resource-constraint", .retry(.busy(.resourceConstraint))),
        ("wait", "remote-server-timeout", .retry(.busy(.remoteServerTimeout))),
        ("modify", "bad-request", .rejected(reason: "modify/bad-request")),
        ("auth", "forbidden", .rejected(reason: "auth/forbidden")),
    ])
    func anErrorMapsByItsType(_ type: String, condition: String, expected: UpstreamOutcome) throws {
        #expect(UpstreamOutcome(answer: try Self.answer(type: type, condition: condition)) == expected)
    }

    /// docs/wire-contract.md, answers: only `item-not-found` and `gone` say the token is dead. Any other `cancel` is the App Server
    /// refusing us: a misconfiguration must never wipe registrations.
    @Test(arguments: [
        "forbidden", "not-allowed", "not-authorized", "service-unavailable", "internal-server-error",
        "undefined-condition", "feature-not-implemented", "some-condition-of-its-own",
    ])
    func anyOtherCancelIsARefusalNotADeadToken(_ condition: String) throws {
        #expect(
            UpstreamOutcome(answer: try Self.answer(type: "cancel", condition: condition))
                == .retry(.refused(StanzaError.Condition(rawValue: condition))))
    }

    @Test(arguments: ["<iq type='error' id='1'/>", "<iq type='error' id='1'><error type='cancel'/></iq>"])
    func anErrorWithoutAConditionIsARefusal(_ xml: String) throws {
        #expect(UpstreamOutcome(answer: try Element.parse(xml)) == .retry(.refused(.undefinedCondition)))
    }

    @Test(arguments: [
        (ComponentLinkError.timedOut, RetryReason.timeout),
        (.disconnected, .linkDown),
        (.notConnected, .linkDown),
    ])
    func aTimeoutOrALostLinkIsRetried(_ failure: ComponentLinkError, reason: RetryReason) {
        #expect(UpstreamOutcome(failure: failure) == .retry(reason))
    }

    /// The reason is what a registration's last error says, and how the server's publish is answered.
    @Test(arguments: [
        (RetryReason.busy(.resourceConstraint), "wait/resource-constraint", StanzaError.Condition.remoteServerTimeout),
        (.unreachable(.remoteServerNotFound), "cancel/remote-server-not-found", .remoteServerTimeout),
        (.refused(.forbidden), "cancel/forbidden", .remoteServerTimeout),
        (.timeout, "wait/timeout", .remoteServerTimeout),
        (.linkDown, "wait/link-down", .remoteServerTimeout),
        (.inFlightCap, "wait/in-flight-cap", .resourceConstraint),
    ])
    func aRetryReasonNamesItselfAndTheServersWait(
        _ reason: RetryReason, name: String,
        serverCondition: StanzaError.Condition
    ) {
        #expect(reason.description == name)
        #expect(reason.serverAnswer == .wait(serverCondition))
    }
}
