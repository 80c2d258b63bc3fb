import Testing
import XMLStream
import XMPP
@testable import APush

@Suite struct EventClassifierTests {
    static func classify(publish xml: String) throws -> ClassifiedPublish {
        let publish = try IncomingPublish(iq: try Element.parse(xml), servedDomains: ["localhost"])
        return EventClassifier.classify(publish.notification)
    }

    static func classify(bridged stanza: String, account: String = "alice@localhost") throws -> PushEvent {
        let classified = try classify(publish: Stanzas.publish(
            notification: Stanzas.bridged(stanza, account: account), options: nil))
        #expect(classified.account == account)
        return classified.event
    }

    static let bob = MessageNotice(chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false,
                                   id: nil, dedupeKey: nil)

    // MARK: Stock

    @Test(arguments: [Fixture.stockMessage, Fixture.stockCall, Fixture.ejabberdMessage])
    func aStockSummaryWithABodyIsAMessageFromTheBareSender(_ xml: String) throws {
        let classified = try Self.classify(publish: xml)
        #expect(classified == ClassifiedPublish(account: nil, event: .message(Self.bob)))
    }

    @Test(arguments: [Fixture.stockPresence, Fixture.stockDisplayedCarbon, Fixture.ejabberdEmpty])
    func aStockNotificationWithoutABodyIsAWake(_ xml: String) throws {
        #expect(try Self.classify(publish: xml) == ClassifiedPublish(account: nil, event: .wake))
    }

    @Test func aStockSummaryWithoutASenderHasNoChat() throws {
        let xml = Stanzas.publish(notification: """
            <x xmlns='jabber:x:data' type='form'><field var='FORM_TYPE' type='hidden'><value>urn:xmpp:push:summary</value>\
            </field><field var='message-count'><value>1</value></field>\
            <field var='last-message-body'><value>New Message!</value></field></x>
            """, options: nil)
        let expected = MessageNotice(chat: "", from: "", groupchat: false, mention: false, id: nil, dedupeKey: nil)
        #expect(try Self.classify(publish: xml).event == .message(expected))
    }

    @Test func noNotificationAtAllIsAWake() {
        #expect(EventClassifier.classify(nil) == ClassifiedPublish(account: nil, event: .wake))
    }

    // MARK: Bridged, from the captures

    @Test func aBridgedChatMessageCarriesTheStanzaIdAndADedupeKey() throws {
        let classified = try Self.classify(publish: Fixture.bridgeMessage)
        #expect(classified == ClassifiedPublish(account: "alice@localhost", event: .message(MessageNotice(
            chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false,
            id: "LHkSr8zFXox9-IHfJw_c1I_-", dedupeKey: "bob@localhost/m1"))))
    }

    @Test func aBridgedMessageWithoutAStanzaIdFallsBackToItsId() throws {
        let classified = try Self.classify(publish: Fixture.bridgeOfflineMessage)
        guard case .message(let notice) = classified.event else {
            Issue.record("not a message: \(classified.event)")
            return
        }
        #expect(notice.id == "m2")
        #expect(notice.dedupeKey == "bob@localhost/m2")
    }

    @Test(arguments: [Fixture.bridgeCall, Fixture.bridgeCallAgain])
    func aBridgedProposeIsACall(_ xml: String) throws {
        let classified = try Self.classify(publish: xml)
        #expect(classified == ClassifiedPublish(account: "alice@localhost", event: .call(CallNotice(
            chat: "bob@localhost", from: "bob@localhost/laptop", sid: "sess1", media: ["audio"]))))
    }

    @Test func aBridgedPresenceIsAWake() throws {
        #expect(try Self.classify(publish: Fixture.bridgePresence).event == .wake)
    }

    @Test(arguments: [Fixture.bridgeDisplayedCarbon, Fixture.bridgeBodyCarbon, Fixture.bridgeOwnDisplayed])
    func theAccountsOwnDisplayedOrReplyIsARead(_ xml: String) throws {
        #expect(try Self.classify(publish: xml) == ClassifiedPublish(account: "alice@localhost",
                                                                      event: .read(chat: "bob@localhost")))
    }

    // MARK: Bridged, built

    @Test func aCallListsEveryMedium() throws {
        let event = try Self.classify(bridged: Stanzas.propose(sid: "s9", media: ["audio", "video"]))
        #expect(event == .call(CallNotice(chat: "bob@localhost", from: "bob@localhost/laptop", sid: "s9",
                                          media: ["audio", "video"])))
    }

    @Test func aRetractEndsTheCallUnanswered() throws {
        #expect(try Self.classify(bridged: Stanzas.jingle("retract", sid: "s9"))
            == .callEnded(sid: "s9", answeredElsewhere: false))
    }

    @Test(arguments: ["accept", "proceed", "reject"])
    func anAnswerEndsTheCallAnsweredElsewhere(_ action: String) throws {
        #expect(try Self.classify(bridged: Stanzas.jingle(action, sid: "s9", from: "alice@localhost/desktop"))
            == .callEnded(sid: "s9", answeredElsewhere: true))
    }

    @Test(arguments: ["accept", "proceed", "reject"])
    func aCarbonOfAnAnswerFromAnotherDeviceEndsTheCallAnsweredElsewhere(_ action: String) throws {
        let carbon = "<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>"
            + "<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + "<message xmlns='jabber:client' from='alice@localhost/desktop' to='bob@localhost/laptop' type='chat'>"
            + "<\(action) xmlns='urn:xmpp:jingle-message:0' id='s9'/></message></forwarded></sent></message>"
        #expect(try Self.classify(bridged: carbon) == .callEnded(sid: "s9", answeredElsewhere: true))
    }

    @Test func aReceivedCarbonIsClassifiedByTheMessageItCopies() throws {
        let carbon = "<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>"
            + "<received xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + Stanzas.chat(id: "r1", to: "alice@localhost/desktop")
            + "</forwarded></received></message>"
        #expect(try Self.classify(bridged: carbon) == .message(MessageNotice(
            chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false, id: "s-r1",
            dedupeKey: "bob@localhost/r1")))
    }

    @Test func aReceivedCarbonFromAnyoneButTheAccountIsNotTrusted() throws {
        let forged = "<message xmlns='jabber:client' from='mallory@localhost/x' to='alice@localhost/phone' type='chat'>"
            + "<received xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + Stanzas.propose(sid: "fake")
            + "</forwarded></received></message>"
        #expect(try Self.classify(bridged: forged) == .wake)
    }

    @Test func aCarbonOfADisplayedNamesTheInnerRecipientAsTheChat() throws {
        #expect(try Self.classify(bridged: Stanzas.displayedCarbon(chat: "carol@localhost/tablet"))
            == .read(chat: "carol@localhost"))
    }

    @Test func aCarbonWithNeitherMarkerNorBodyIsAWake() throws {
        let composing = """
            <message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>\
            <sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>\
            <message xmlns='jabber:client' from='alice@localhost/desktop' to='bob@localhost' type='chat'>\
            <composing xmlns='http://jabber.org/protocol/chatstates'/></message></forwarded></sent></message>
            """
        #expect(try Self.classify(bridged: composing) == .wake)
    }

    @Test func anMDSEventIsAReadOfTheItemsChat() throws {
        let mds = """
            <message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='headline'>\
            <event xmlns='http://jabber.org/protocol/pubsub#event'><items node='urn:xmpp:mds:displayed:0'>\
            <item id='crew@muc.localhost'><displayed xmlns='urn:xmpp:mds:displayed:0'>\
            <stanza-id xmlns='urn:xmpp:sid:0' id='x1' by='crew@muc.localhost'/></displayed></item></items></event></message>
            """
        #expect(try Self.classify(bridged: mds) == .read(chat: "crew@muc.localhost"))
    }

    @Test func theAccountsOwnMessageToItselfIsNotARead() throws {
        let note = Stanzas.chat(id: "n1", from: "alice@localhost/desktop", to: "alice@localhost")
        #expect(try Self.classify(bridged: note) == .wake)
    }

    @Test func aGroupchatMessageIsFiledUnderTheRoomFromTheNick() throws {
        let message = """
            <message xmlns='jabber:client' type='groupchat' id='g1' from='crew@muc.localhost/Zoë' to='alice@localhost'>\
            <body>lunch?</body><origin-id xmlns='urn:xmpp:sid:0' id='o1'/></message>
            """
        #expect(try Self.classify(bridged: message) == .message(MessageNotice(
            chat: "crew@muc.localhost", from: "Zoë", groupchat: true, mention: false, id: "g1",
            dedupeKey: "crew@muc.localhost/Zoë/o1")))
    }

    @Test func twoOccupantsReusingAnIdAreNotDuplicatesOfEachOther() throws {
        func message(from nick: String) -> String {
            "<message xmlns='jabber:client' type='groupchat' id='same' from='crew@muc.localhost/\(nick)' "
                + "to='alice@localhost'><body>hi</body><origin-id xmlns='urn:xmpp:sid:0' id='same'/></message>"
        }
        guard case .message(let first) = try Self.classify(bridged: message(from: "Zoë")),
              case .message(let second) = try Self.classify(bridged: message(from: "Ann")) else {
            Issue.record("both are messages")
            return
        }
        #expect(first.dedupeKey != second.dedupeKey)
    }

    @Test(arguments: [
        "<body>see the reference</body><reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:alice@localhost'/>",
        "<body>hey Alice, lunch?</body>",
    ])
    func aGroupchatMessageMentioningTheAccountIsAMention(_ content: String) throws {
        let message = "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/Zoë' "
            + "to='alice@localhost'>\(content)</message>"
        guard case .message(let notice) = try Self.classify(bridged: message) else {
            Issue.record("not a message")
            return
        }
        #expect(notice.mention)
        #expect(notice.groupchat)
    }

    /// The bridge's stripped copy (PROTOCOL.md §2.2): the body is an empty marker, and a mention by
    /// name, which needs the text, comes on `<account mention='true'/>`.
    @Test func aStrippedBodyIsAMessageAndTheBridgeSaysWhetherItMentions() throws {
        let message = "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/Zoë' "
            + "to='alice@localhost' id='g7'><body/></message>"
        for (mention, expected) in [(" mention='true'", true), ("", false)] {
            let notification = "<account xmlns='urn:xmpp:apush:bridge:0' jid='alice@localhost' important='true'\(mention)/>"
                + "<forwarded xmlns='urn:xmpp:forward:0'>\(message)</forwarded>"
            let classified = try Self.classify(publish: Stanzas.publish(notification: notification, options: nil))
            guard case .message(let notice) = classified.event else {
                Issue.record("not a message: \(classified.event)")
                return
            }
            #expect(notice.mention == expected)
            #expect(notice.chat == "crew@muc.localhost" && notice.from == "Zoë")
        }
    }

    @Test func theBridgesMentionCountsOnlyInAGroupChat() throws {
        let notification = "<account xmlns='urn:xmpp:apush:bridge:0' jid='alice@localhost' important='true' mention='true'/>"
            + "<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' type='chat' id='c1' "
            + "from='bob@localhost/laptop' to='alice@localhost'><body/></message></forwarded>"
        let classified = try Self.classify(publish: Stanzas.publish(notification: notification, options: nil))
        #expect(classified.event == .message(MessageNotice(
            chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false, id: "c1",
            dedupeKey: "bob@localhost/c1")))
    }

    @Test func aReferenceToSomeoneElseIsNoMention() throws {
        let message = "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/Zoë' "
            + "to='alice@localhost'><body>ping</body>"
            + "<reference xmlns='urn:xmpp:reference:0' type='mention' uri='xmpp:bob@localhost'/></message>"
        guard case .message(let notice) = try Self.classify(bridged: message) else {
            Issue.record("not a message")
            return
        }
        #expect(!notice.mention)
    }

    @Test(arguments: [
        "<encrypted xmlns='eu.siacs.conversations.axolotl'><header sid='1'/><payload>AAAA</payload></encrypted>",
        "<encrypted xmlns='urn:xmpp:omemo:2'><header sid='1'/><payload>AAAA</payload></encrypted>",
        "<openpgp xmlns='urn:xmpp:openpgp:0'>AAAA</openpgp>",
        "<x xmlns='jabber:x:encrypted'>AAAA</x>",
    ])
    func anEncryptedMessageWithoutABodyIsAMessage(_ payload: String) throws {
        let message = "<message xmlns='jabber:client' type='chat' id='e1' from='bob@localhost/laptop' "
            + "to='alice@localhost'>\(payload)</message>"
        #expect(try Self.classify(bridged: message) == .message(MessageNotice(
            chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false, id: "e1",
            dedupeKey: "bob@localhost/e1")))
    }

    @Test(arguments: [
        "<active xmlns='http://jabber.org/protocol/chatstates'/>",
        "<body>   </body>",
        "<received xmlns='urn:xmpp:receipts' id='m1'/>",
    ])
    func aMessageWithNothingToReadIsAWake(_ content: String) throws {
        let message = "<message xmlns='jabber:client' type='chat' from='bob@localhost/laptop' "
            + "to='alice@localhost'>\(content)</message>"
        #expect(try Self.classify(bridged: message) == .wake)
    }

    @Test func aForwardedIQIsAWake() throws {
        let iq = "<iq xmlns='jabber:client' type='get' id='q' from='localhost' to='alice@localhost/phone'>"
            + "<ping xmlns='urn:xmpp:ping'/></iq>"
        #expect(try Self.classify(bridged: iq) == .wake)
    }

    @Test(arguments: [("bob@localhost/laptop", "bob@localhost"), ("localhost", "localhost"), ("not a jid@", nil)]
        as [(String, String?)])
    func bareJIDDropsTheResource(_ text: String, expected: String?) {
        #expect(EventClassifier.bareJID(text) == expected)
    }
}
