import Testing
import XMPP

@Suite struct NamespaceTests {
    /// The constants against the strings the servers really sent (Tests/Captures).
    @Test(arguments: [
        (Namespace.pubsub, "http://jabber.org/protocol/pubsub"),
        (Namespace.pubsubPublishOptions, "http://jabber.org/protocol/pubsub#publish-options"),
        (Namespace.push, "urn:xmpp:push:0"),
        (Namespace.pushSummary, "urn:xmpp:push:summary"),
        (Namespace.dataForms, "jabber:x:data"),
        (Namespace.discoInfo, "http://jabber.org/protocol/disco#info"),
        (Namespace.stanzaErrors, "urn:ietf:params:xml:ns:xmpp-stanzas"),
        (Namespace.forward, "urn:xmpp:forward:0"),
        (Namespace.client, "jabber:client"),
        (Namespace.receipts, "urn:xmpp:receipts"),
        (Namespace.chatMarkers, "urn:xmpp:chat-markers:0"),
        (Namespace.sid, "urn:xmpp:sid:0"),
        (Namespace.delay, "urn:xmpp:delay"),
        (Namespace.carbons, "urn:xmpp:carbons:2"),
        (Namespace.jingleMessage, "urn:xmpp:jingle-message:0"),
        (Namespace.jingleRTP, "urn:xmpp:jingle:apps:rtp:1"),
        (Namespace.hints, "urn:xmpp:hints"),
    ])
    func matchesTheCapturedWire(constant: String, captured: String) {
        #expect(constant == captured)
    }
}
