/// XML namespaces of XMPP core and of the XEPs this library reads or writes.
public enum Namespace {
    // RFC 6120 and XEP-0114.
    public static let client = "jabber:client"
    public static let componentAccept = "jabber:component:accept"
    public static let streams = "http://etherx.jabber.org/streams"
    public static let streamErrors = "urn:ietf:params:xml:ns:xmpp-streams"
    public static let stanzaErrors = "urn:ietf:params:xml:ns:xmpp-stanzas"

    /// XEP-0004 Data Forms.
    public static let dataForms = "jabber:x:data"
    /// XEP-0030 Service Discovery.
    public static let discoInfo = "http://jabber.org/protocol/disco#info"
    public static let discoItems = "http://jabber.org/protocol/disco#items"
    /// XEP-0050 Ad-Hoc Commands.
    public static let commands = "http://jabber.org/protocol/commands"
    /// XEP-0199 XMPP Ping.
    public static let ping = "urn:xmpp:ping"
    /// XEP-0092 Software Version.
    public static let version = "jabber:iq:version"

    /// XEP-0060 Publish-Subscribe.
    public static let pubsub = "http://jabber.org/protocol/pubsub"
    public static let pubsubEvent = "http://jabber.org/protocol/pubsub#event"
    public static let pubsubErrors = "http://jabber.org/protocol/pubsub#errors"
    /// The FORM_TYPE of `<publish-options/>` forms.
    public static let pubsubPublishOptions = "http://jabber.org/protocol/pubsub#publish-options"
    /// XEP-0357 Push Notifications, and its summary FORM_TYPE.
    public static let push = "urn:xmpp:push:0"
    public static let pushSummary = "urn:xmpp:push:summary"

    /// XEP-0297 Stanza Forwarding.
    public static let forward = "urn:xmpp:forward:0"
    /// XEP-0359 Unique and Stable Stanza IDs.
    public static let sid = "urn:xmpp:sid:0"
    /// XEP-0203 Delayed Delivery.
    public static let delay = "urn:xmpp:delay"
    /// XEP-0280 Message Carbons.
    public static let carbons = "urn:xmpp:carbons:2"
    /// XEP-0333 Chat Markers.
    public static let chatMarkers = "urn:xmpp:chat-markers:0"
    /// XEP-0184 Message Delivery Receipts.
    public static let receipts = "urn:xmpp:receipts"
    /// XEP-0334 Message Processing Hints.
    public static let hints = "urn:xmpp:hints"
    /// XEP-0372 References.
    public static let references = "urn:xmpp:reference:0"
    /// XEP-0490 Message Displayed Synchronization.
    public static let mds = "urn:xmpp:mds:displayed:0"
    /// XEP-0384 OMEMO: the deployed 0.3 namespace, and the current one.
    public static let omemo = "eu.siacs.conversations.axolotl"
    public static let omemo2 = "urn:xmpp:omemo:2"
    /// XEP-0373 OpenPGP for XMPP, and the legacy XEP-0027.
    public static let openPGP = "urn:xmpp:openpgp:0"
    public static let legacyPGP = "jabber:x:encrypted"

    /// XEP-0353 Jingle Message Initiation, and XEP-0167 Jingle RTP sessions.
    public static let jingleMessage = "urn:xmpp:jingle-message:0"
    public static let jingleRTP = "urn:xmpp:jingle:apps:rtp:1"
}
