import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush

@Suite struct UpstreamTests {
    static func upstream(_ sender: RecordingSender) throws -> Upstream {
        Upstream(
            sender: sender, componentJID: try JID("apush.localhost"), appServer: try JID("push.example.org"),
            timeout: .seconds(25))
    }

    @Test func aMessagePublishCarriesTheEnvelopeAndTheCollapseTagButNoKind() throws {
        let fields = Upstream.Fields(envelope: "ENVELOPE", kind: nil, collapse: "TAG")
        let iq = Upstream.iq(
            node: "tok123", pushModule: "anotherimIOSprod", fields: fields,
            from: try JID("apush.localhost"), to: try JID("push.example.org"))
        let publish = UpstreamPublish(iq)
        #expect(iq[attribute: "type"] == "set")
        #expect(iq[attribute: "from"] == "apush.localhost")
        #expect(iq[attribute: "to"] == "push.example.org")
        #expect(iq[attribute: "id"] == nil)
        #expect(publish.node == "tok123")
        #expect(publish.pushModule == "anotherimIOSprod")
        #expect(publish.envelope == "ENVELOPE")
        #expect(publish.kind == nil)
        #expect(publish.collapse == "TAG")
    }

    @Test(arguments: ["voip", "read", "wake"])
    func otherKindsNameTheirKindAndCarryNoCollapseTag(_ kind: String) throws {
        let fields = Upstream.Fields(envelope: "E", kind: kind, collapse: nil)
        let publish = UpstreamPublish(
            Upstream.iq(
                node: "n", pushModule: "m", fields: fields,
                from: try JID("apush.localhost"), to: try JID("push.example.org")))
        #expect(publish.kind == kind)
        #expect(publish.collapse == nil)
    }

    @Test func theSerialisationIsTheProtocolsShape() throws {
        let iq = Upstream.iq(
            node: "tok", pushModule: "mod", fields: .init(envelope: "E", kind: "voip", collapse: nil),
            from: try JID("apush.localhost"), to: try JID("push.example.org"))
        let xml = iq.serialized()
        let reparsed = try Element.parse(xml)
        #expect(UpstreamPublish(reparsed).envelope == "E")
        #expect(UpstreamPublish(reparsed).kind == "voip")
        #expect(xml.contains("urn:xmpp:push:summary"))
        #expect(xml.contains("http://jabber.org/protocol/pubsub#publish-options"))
    }

    @Test(arguments: [
        (RecordingSender.Answer.result, UpstreamOutcome.accepted),
        (.error(type: "cancel", condition: "item-not-found"), .deadToken),
        (.error(type: "wait", condition: "resource-constraint"), .retry(.busy(.resourceConstraint))),
        (.error(type: "cancel", condition: "forbidden"), .retry(.refused(.forbidden))),
        (.error(type: "modify", condition: "bad-request"), .rejected(reason: "modify/bad-request")),
        (.timeout, .retry(.timeout)),
        (.disconnected, .retry(.linkDown)),
    ])
    func publishSaysWhatTheAnswerMeans(_ answer: RecordingSender.Answer, expected: UpstreamOutcome) async throws {
        let sender = RecordingSender()
        sender.script(answer)
        let outcome = await (try Self.upstream(sender)).publish(
            node: "tok", pushModule: "mod", fields: .init(envelope: "E", kind: nil, collapse: "T"))
        #expect(outcome == expected)
        #expect(sender.requests.count == 1)
        #expect(UpstreamPublish(try #require(sender.requests.first)).node == "tok")
    }
}
