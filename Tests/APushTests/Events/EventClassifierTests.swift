import Foundation
import Sealing
import Testing
import XMLStream
import XMPP

@testable import APush

@Suite struct EventClassifierTests {
    static let component = try! JID("apush.localhost")
    static func classify(publish xml: String) throws -> ClassifiedPublish {
        let publish = try IncomingPublish(
            iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        return EventClassifier.classify(publish.notification)
    }

    static func classify(bridged stanza: String, account: String = "alice@localhost") throws -> PushEvent {
        let classified = try classify(
            publish: Stanzas.publish(
                notification: Stanzas.bridged(stanza, account: account), options: nil))
        #expect(classified.account == account)
        return classified.event
    }

    static let bob = MessageNotice(
        chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false,
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
        let xml = Stanzas.publish(
            notification: """
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

    /// ejabberd's bridge names a mention by name (alice's name is in the body), which counts in a
    /// groupchat only.
    @Test(arguments: [
        (Fixture.bridgeMessage, "LHkSr8zFXox9-IHfJw_c1I_-"), (Fixture.ejabberdBridgeMessage, "1796129090144854"),
    ])
    func aBridgedChatMessageCarriesTheStanzaIdAndADedupeKey(_ xml: String, stanzaID: String) throws {
        let classified = try Self.classify(publish: xml)
        #expect(
            classified
                == ClassifiedPublish(
                    account: "alice@localhost",
                    event: .message(
                        MessageNotice(
                            chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false,
                            id: stanzaID, dedupeKey: "bob@localhost/m1"))))
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

    @Test(arguments: [Fixture.bridgeCall, Fixture.bridgeCallAgain, Fixture.ejabberdBridgeCall])
    func aBridgedProposeIsACall(_ xml: String) throws {
        let classified = try Self.classify(publish: xml)
        #expect(
            classified
                == ClassifiedPublish(
                    account: "alice@localhost",
                    event: .call(
                        CallNotice(
                            chat: "bob@localhost", from: "bob@localhost/laptop", sid: "sess1", media: ["audio"]))))
    }

    /// ejabberd's bridge names the account but forwards no presence to a hibernated session.
    @Test(arguments: [Fixture.bridgePresence, Fixture.ejabberdBridgeHibernatedWake])
    func aBridgedPresenceIsAWakeForTheAccount(_ xml: String) throws {
        #expect(try Self.classify(publish: xml) == ClassifiedPublish(account: "alice@localhost", event: .wake))
    }

    @Test(arguments: [
        Fixture.bridgeDisplayedCarbon, Fixture.bridgeBodyCarbon, Fixture.bridgeOwnDisplayed,
        Fixture.ejabberdBridgeOwnDisplayed, Fixture.ejabberdBridgeOwnBody,
    ])
    func theAccountsOwnDisplayedOrReplyIsARead(_ xml: String) throws {
        #expect(
            try Self.classify(publish: xml)
                == ClassifiedPublish(
                    account: "alice@localhost",
                    event: .read(chat: "bob@localhost")))
    }

    // MARK: Bridged, built

    @Test func aCallListsEveryMedium() throws {
        let event = try Self.classify(bridged: Stanzas.propose(sid: "s9", media: ["audio", "video"]))
        #expect(
            event
                == .call(
                    CallNotice(
                        chat: "bob@localhost", from: "bob@localhost/laptop", sid: "s9",
                        media: ["audio", "video"])))
    }

    @Test func aRetractEndsTheCallUnanswered() throws {
        #expect(
            try Self.classify(bridged: Stanzas.jingle("retract", sid: "s9"))
                == .callEnded(sid: "s9", by: "bob@localhost", answeredElsewhere: false))
    }

    @Test(arguments: ["accept", "proceed", "reject"])
    func anAnswerEndsTheCallAnsweredElsewhere(_ action: String) throws {
        #expect(
            try Self.classify(bridged: Stanzas.jingle(action, sid: "s9", from: "alice@localhost/desktop"))
                == .callEnded(sid: "s9", by: "alice@localhost", answeredElsewhere: true))
    }

    @Test(arguments: ["accept", "proceed", "reject"])
    func aCarbonOfAnAnswerFromAnotherDeviceEndsTheCallAnsweredElsewhere(_ action: String) throws {
        let carbon =
            "<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>"
            + "<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + "<message xmlns='jabber:client' from='alice@localhost/desktop' to='bob@localhost/laptop' type='chat'>"
            + "<\(action) xmlns='urn:xmpp:jingle-message:0' id='s9'/></message></forwarded></sent></message>"
        #expect(
            try Self.classify(bridged: carbon) == .callEnded(sid: "s9", by: "alice@localhost", answeredElsewhere: true))
    }

    @Test func aReceivedCarbonIsClassifiedByTheMessageItCopies() throws {
        let carbon =
            "<message xmlns='jabber:client' from='alice@localhost' to='alice@localhost/phone' type='chat'>"
            + "<received xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + Stanzas.chat(id: "r1", to: "alice@localhost/desktop")
            + "</forwarded></received></message>"
        #expect(
            try Self.classify(bridged: carbon)
                == .message(
                    MessageNotice(
                        chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false, id: "s-r1",
                        dedupeKey: "bob@localhost/r1")))
    }

    @Test func aReceivedCarbonFromAnyoneButTheAccountIsNotTrusted() throws {
        let forged =
            "<message xmlns='jabber:client' from='mallory@localhost/x' to='alice@localhost/phone' type='chat'>"
            + "<received xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + Stanzas.propose(sid: "fake")
            + "</forwarded></received></message>"
        #expect(try Self.classify(bridged: forged) == .wake)
    }

    @Test func aCarbonOfADisplayedNamesTheInnerRecipientAsTheChat() throws {
        #expect(
            try Self.classify(bridged: Stanzas.displayedCarbon(chat: "carol@localhost/tablet"))
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
        #expect(
            try Self.classify(bridged: message)
                == .message(
                    MessageNotice(
                        chat: "crew@muc.localhost", from: "Zoë", groupchat: true, mention: false, id: "g1",
                        dedupeKey: "crew@muc.localhost/Zoë/o1")))
    }

    @Test func twoOccupantsReusingAnIdAreNotDuplicatesOfEachOther() throws {
        func message(from nick: String) -> String {
            "<message xmlns='jabber:client' type='groupchat' id='same' from='crew@muc.localhost/\(nick)' "
                + "to='alice@localhost'><body>hi</body><origin-id xmlns='urn:xmpp:sid:0' id='same'/></message>"
        }
        guard case .message(let first) = try Self.classify(bridged: message(from: "Zoë")),
            case .message(let second) = try Self.classify(bridged: message(from: "Ann"))
        else {
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
        let message =
            "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/Zoë' "
            + "to='alice@localhost'>\(content)</message>"
        guard case .message(let notice) = try Self.classify(bridged: message) else {
            Issue.record("not a message")
            return
        }
        #expect(notice.mention)
        #expect(notice.groupchat)
    }

    /// The bridge's stripped copy (docs/wire-contract.md, Bridge stanzas): the body is an empty marker, and a mention
    /// by
    /// name, which needs the text, comes on `<account mention='true'/>`.
    @Test func aStrippedBodyIsAMessageAndTheBridgeSaysWhetherItMentions() throws {
        let message =
            "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/Zoë' "
            + "to='alice@localhost' id='g7'><body/></message>"
        for (mention, expected) in [(" mention='true'", true), ("", false)] {
            let notification =
                "<account xmlns='urn:xmpp:apush:bridge:0' jid='alice@localhost' important='true'\(mention)/>"
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
        let notification =
            "<account xmlns='urn:xmpp:apush:bridge:0' jid='alice@localhost' important='true' mention='true'/>"
            + "<forwarded xmlns='urn:xmpp:forward:0'><message xmlns='jabber:client' type='chat' id='c1' "
            + "from='bob@localhost/laptop' to='alice@localhost'><body/></message></forwarded>"
        let classified = try Self.classify(publish: Stanzas.publish(notification: notification, options: nil))
        #expect(
            classified.event
                == .message(
                    MessageNotice(
                        chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false, id: "c1",
                        dedupeKey: "bob@localhost/c1")))
    }

    @Test func aReferenceToSomeoneElseIsNoMention() throws {
        let message =
            "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/Zoë' "
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
        let message =
            "<message xmlns='jabber:client' type='chat' id='e1' from='bob@localhost/laptop' "
            + "to='alice@localhost'>\(payload)</message>"
        #expect(
            try Self.classify(bridged: message)
                == .message(
                    MessageNotice(
                        chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false, id: "e1",
                        dedupeKey: "bob@localhost/e1")))
    }

    @Test(arguments: [
        "<active xmlns='http://jabber.org/protocol/chatstates'/>",
        "<body>   </body>",
        "<received xmlns='urn:xmpp:receipts' id='m1'/>",
    ])
    func aMessageWithNothingToReadIsAWake(_ content: String) throws {
        let message =
            "<message xmlns='jabber:client' type='chat' from='bob@localhost/laptop' "
            + "to='alice@localhost'>\(content)</message>"
        #expect(try Self.classify(bridged: message) == .wake)
    }

    @Test func aForwardedIQIsAWake() throws {
        let iq =
            "<iq xmlns='jabber:client' type='get' id='q' from='localhost' to='alice@localhost/phone'>"
            + "<ping xmlns='urn:xmpp:ping'/></iq>"
        #expect(try Self.classify(bridged: iq) == .wake)
    }

    @Test(
        arguments: [("bob@localhost/laptop", "bob@localhost"), ("localhost", "localhost"), ("not a jid@", nil)]
            as [(String, String?)])
    func bareJIDDropsTheResource(_ text: String, expected: String?) {
        #expect(EventClassifier.bareJID(text) == expected)
    }
}

// MARK: - Hostile input

/// What a sender writes never becomes query syntax and never reaches a trap: each of these once
/// stopped the process (a combining mark fused with the `=` of a `<by=…>` filter, a prepend character
/// with its `>`).
@Suite struct EventClassifierHostileInputTests {
    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "'", with: "&apos;")
    }

    @Test(
        arguments: [
            ("\u{0301}crew@muc.localhost", "Zoë"),  // a combining mark after "="
            ("crew@muc.localhost\u{0D4E}", "Zoë"),  // a prepend character before ">"
            ("crew\u{111C2}@muc.localhost", "Zoë"),
            ("crew\u{0600}@muc.localhost", "Zoë"),  // U+0600-range prepend characters
            ("\u{0605}crew\u{0604}@muc.localhost", "\u{0603}"),
            ("\u{0301}\u{0301}crew@muc.localhost\u{0D4E}", "\u{0600}\u{0301}"),
            ("crew@muc.localhost", "a>b=c}d@e/f\\g<h{i|int"),  // query syntax in the nick
            ("crew@muc.localhost", "\u{0600}>"),
            (String(repeating: "\u{0301}", count: 200) + "@muc.localhost", "Zoë"),
            (String(repeating: "x", count: 300) + "\u{0301}@muc.localhost", String(repeating: ">", count: 900)),
        ] as [(String, String)])
    func aGroupchatFromAHostileRoomOrNickIsFiledUnderTheRoomWithTheRoomsStanzaId(room: String, nick: String) throws {
        let message =
            "<message xmlns='jabber:client' type='groupchat' id='g1' from='\(Self.escaped(room + "/" + nick))' "
            + "to='alice@localhost'><body>hi</body>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='forged' by='alice@localhost'/>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='archived' by='\(Self.escaped(room))'/></message>"
        guard case .message(let notice) = try EventClassifierTests.classify(bridged: message) else {
            Issue.record("not a message")
            return
        }
        #expect(notice.chat == (try JID(room)).description)
        #expect(notice.groupchat)
        #expect(notice.id == "archived")
        #expect(notice.from.utf8.count <= 256)
        #expect(nick.hasPrefix(notice.from))
    }

    @Test(arguments: ["\u{0301}alice@localhost", "alice@localhost\u{0D4E}", "alice\u{111C2}@localhost"])
    func aChatToAnAccountWithAHostileNameFindsTheAccountsStanzaId(account: String) throws {
        let message =
            "<message xmlns='jabber:client' type='chat' id='m1' from='bob@localhost/laptop' "
            + "to='\(account)'><body>hi</body>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='forged' by='bob@localhost'/>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='archived' by='\(account)'/></message>"
        let event = try EventClassifierTests.classify(bridged: message, account: account)
        guard case .message(let notice) = event else {
            Issue.record("not a message: \(event)")
            return
        }
        #expect(notice.id == "archived")
    }
}

/// Only the account itself can read or answer a call elsewhere (docs/wire-contract.md, Classifying a publish); only the
/// caller can
/// retract its call.
@Suite struct EventClassifierSenderTests {
    static func classify(_ stanza: String) throws -> PushEvent { try EventClassifierTests.classify(bridged: stanza) }

    static func sentCarbon(
        wrapper: String = "alice@localhost", inner: String = "alice@localhost/desktop",
        content: String = "<displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/>",
        outer: String = ""
    ) -> String {
        "<message xmlns='jabber:client' from='\(wrapper)' to='alice@localhost/phone' type='chat'>"
            + "<sent xmlns='urn:xmpp:carbons:2'><forwarded xmlns='urn:xmpp:forward:0'>"
            + "<message xmlns='jabber:client' from='\(inner)' to='bob@localhost' type='chat' id='d1'>"
            + content + "</message></forwarded></sent>\(outer)</message>"
    }

    static func mds(from: String?) -> String {
        "<message xmlns='jabber:client'\(from.map { " from='\($0)'" } ?? "") to='alice@localhost/phone' type='headline'>"
            + "<event xmlns='http://jabber.org/protocol/pubsub#event'><items node='urn:xmpp:mds:displayed:0'>"
            + "<item id='bob@localhost'><displayed xmlns='urn:xmpp:mds:displayed:0'>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='x1' by='bob@localhost'/></displayed></item></items></event></message>"
    }

    /// Stanzas shaped like a read that do not come from the account.
    static let forgedReads = [
        sentCarbon(wrapper: "mallory@localhost/x"),
        sentCarbon(wrapper: "mallory@localhost"),
        sentCarbon(wrapper: "localhost"),
        sentCarbon(inner: "mallory@localhost/desktop"),
        sentCarbon(wrapper: "mallory@localhost/x", content: "<body>I read it</body>"),
        mds(from: "mallory@localhost"),
        mds(from: "mallory@localhost/x"),
        mds(from: nil),
        "<message xmlns='jabber:client' from='mallory@localhost/x' to='bob@localhost' type='chat'>"
            + "<displayed xmlns='urn:xmpp:chat-markers:0' id='m1'/></message>",
    ]

    @Test(arguments: forgedReads)
    func aReadShapedStanzaFromAnyoneButTheAccountIsNoRead(_ stanza: String) throws {
        let event = try Self.classify(stanza)
        if case .read = event { Issue.record("a read from a stranger: \(event)") }
    }

    @Test func aSentCarbonFromAStrangerIsAtMostAMessageFromThem() throws {
        let forged = Self.sentCarbon(wrapper: "mallory@localhost/x", outer: "<body>hello</body>")
        guard case .message(let notice) = try Self.classify(forged) else {
            Issue.record("not a message")
            return
        }
        #expect(notice.chat == "mallory@localhost")
    }

    @Test(arguments: [sentCarbon(), mds(from: "alice@localhost"), mds(from: "Alice@LOCALHOST")])
    func theAccountsOwnReadIsARead(_ stanza: String) throws {
        #expect(try Self.classify(stanza) == .read(chat: "bob@localhost"))
    }

    @Test func theAccountsOwnProposeFromAnotherDeviceIsNoCallToItself() throws {
        let own = EventClassifierBoundsTests.propose(sid: "s1", media: ["audio"], from: "alice@localhost/desktop")
        if case .call = try Self.classify(own) { Issue.record("the account's own call rang its phone") }
    }

    @Test func aRetractNamesItsSender() throws {
        #expect(
            try Self.classify(Stanzas.jingle("retract", sid: "s9", from: "mallory@localhost/x"))
                == .callEnded(sid: "s9", by: "mallory@localhost", answeredElsewhere: false))
    }

    @Test func aRetractWithoutASenderEndsNothing() throws {
        let retract =
            "<message xmlns='jabber:client' type='chat' to='alice@localhost'>"
            + "<retract xmlns='urn:xmpp:jingle-message:0' id='s9'/></message>"
        #expect(try Self.classify(retract) == .wake)
    }

    @Test(arguments: ["accept", "proceed", "reject"])
    func anAnswerFromAnyoneButTheAccountEndsNothing(_ action: String) throws {
        for from in ["bob@localhost/laptop", "mallory@localhost", "localhost"] {
            let event = try Self.classify(Stanzas.jingle(action, sid: "s9", from: from))
            if case .callEnded = event { Issue.record("\(from)'s \(action) ended a call") }
        }
        let forgedCarbon = Self.sentCarbon(
            wrapper: "mallory@localhost/x",
            content: "<\(action) xmlns='urn:xmpp:jingle-message:0' id='s9'/>")
        if case .callEnded = try Self.classify(forgedCarbon) { Issue.record("a forged carbon ended a call") }
        let strangersCopy = Self.sentCarbon(
            inner: "mallory@localhost/desktop",
            content: "<\(action) xmlns='urn:xmpp:jingle-message:0' id='s9'/>")
        if case .callEnded = try Self.classify(strangersCopy) { Issue.record("a stranger's copy ended a call") }
    }
}

/// What a sender writes is bounded before it reaches a stored row or the summary.
@Suite struct EventClassifierBoundsTests {
    static func classify(_ stanza: String) throws -> PushEvent { try EventClassifierTests.classify(bridged: stanza) }

    static func propose(sid: String, media: [String], from: String = "bob@localhost/laptop") -> String {
        "<message xmlns='jabber:client' type='chat' from='\(from)' to='alice@localhost'>"
            + "<propose xmlns='urn:xmpp:jingle-message:0' id='\(sid)'>"
            + media.map { "<description xmlns='urn:xmpp:jingle:apps:rtp:1' media='\($0)'/>" }.joined()
            + "</propose></message>"
    }

    @Test func aCallSIDOverTheBoundMakesNoCall() throws {
        let long = String(repeating: "s", count: EventClassifier.Bound.id + 1)
        #expect(try Self.classify(Self.propose(sid: long, media: ["audio"])) == .wake)
        #expect(try Self.classify(Stanzas.jingle("retract", sid: long)) == .wake)
        let longest = String(repeating: "s", count: EventClassifier.Bound.id)
        guard case .call(let call) = try Self.classify(Self.propose(sid: longest, media: ["audio"])) else {
            Issue.record("not a call")
            return
        }
        #expect(call.sid == longest)
    }

    @Test func mediaAreDeduplicatedFewAndShort() throws {
        let media =
            ["audio", "video", "audio", String(repeating: "v", count: 100), "a b", ""]
            + (0..<50).map { "m\($0)" }
        guard case .call(let call) = try Self.classify(Self.propose(sid: "s1", media: media)) else {
            Issue.record("not a call")
            return
        }
        #expect(call.media.prefix(2) == ["audio", "video"])
        #expect(call.media.count <= EventClassifier.Bound.media)
        #expect(Set(call.media).count == call.media.count)
        #expect(
            call.media.allSatisfy { !$0.isEmpty && $0.utf8.count <= EventClassifier.Bound.medium && !$0.contains(" ") })
    }

    @Test func aLongCallerResourceNamesTheBareCaller() throws {
        let from = "bob@localhost/" + String(repeating: "r", count: 1000)
        guard case .call(let call) = try Self.classify(Self.propose(sid: "s1", media: ["audio"], from: from)) else {
            Issue.record("not a call")
            return
        }
        #expect(call.from == "bob@localhost")
    }

    @Test func aSenderWithAJIDOverTheBoundIsOnlyAWake() throws {
        let long = String(repeating: "b", count: EventClassifier.Bound.jid) + "@localhost"
        #expect(try Self.classify(Stanzas.chat(id: "m1", from: long + "/laptop")) == .wake)
        #expect(try Self.classify(Self.propose(sid: "s1", media: ["audio"], from: long + "/x")) == .wake)
        #expect(
            try Self.classify(
                EventClassifierSenderTests.sentCarbon().replacingOccurrences(
                    of: "to='bob@localhost'", with: "to='\(long)'")) == .wake)
    }

    @Test func overlongIdsAreLeftOutAndTheDedupeKeyStaysBounded() throws {
        let long = String(repeating: "i", count: 5000)
        let message =
            "<message xmlns='jabber:client' type='groupchat' id='\(long)' "
            + "from='crew@muc.localhost/\(String(repeating: "n", count: 1000))' to='alice@localhost'>"
            + "<body>hi</body><origin-id xmlns='urn:xmpp:sid:0' id='\(long)'/>"
            + "<stanza-id xmlns='urn:xmpp:sid:0' id='\(long)' by='crew@muc.localhost'/></message>"
        guard case .message(let notice) = try Self.classify(message) else {
            Issue.record("not a message")
            return
        }
        #expect(notice.id == nil)
        #expect(notice.dedupeKey == nil)
        #expect(notice.from.utf8.count <= EventClassifier.Bound.name)
    }

    @Test func aDedupeKeyOverTheBoundIsLeftOut() throws {
        func key(nick: String) throws -> String? {
            let message =
                "<message xmlns='jabber:client' type='groupchat' id='o1' from='crew@muc.localhost/\(nick)' "
                + "to='alice@localhost'><body>hi</body></message>"
            guard case .message(let notice) = try Self.classify(message) else { return nil }
            return notice.dedupeKey
        }
        #expect(
            try key(nick: String(repeating: "n", count: 1000))
                == "crew@muc.localhost/\(String(repeating: "n", count: 1000))/o1")
        #expect(try key(nick: String(repeating: "n", count: 1010)) == nil)
    }

    @Test func aNickOfOneCharacterWithThousandsOfMarksIsCutByBytes() throws {
        let nick = "a" + String(repeating: "\u{0301}", count: 500)
        let message =
            "<message xmlns='jabber:client' type='groupchat' from='crew@muc.localhost/\(nick)' "
            + "to='alice@localhost'><body>hi</body></message>"
        guard case .message(let notice) = try Self.classify(message) else {
            Issue.record("not a message")
            return
        }
        #expect(!notice.from.isEmpty)
        #expect(notice.from.utf8.count <= EventClassifier.Bound.name)
    }

    /// Everything a sender controls, at its longest and all of it escaped in JSON, still fits the
    /// envelope with room for an account of 512 bytes.
    @Test func theLongestHostileEventsStillFitTheEnvelope() throws {
        let room = String(repeating: "\\", count: 240) + "@localhost"  // 490 bytes once escaped
        let quotes = { (count: Int) in String(repeating: "&quot;", count: count) }
        let call = Self.propose(
            sid: quotes(128), media: ["audio", "video", quotes(8), "x", "y", "z"],
            from: "\(room)/\(quotes(1000))")
        let message =
            "<message xmlns='jabber:client' type='groupchat' id='\(quotes(128))' "
            + "from='\(room)/\(quotes(1000))' to='alice@localhost'><body>hi</body></message>"
        guard case .call(let proposed) = try Self.classify(call),
            case .message(let notice) = try Self.classify(message)
        else {
            Issue.record("not a call and a message")
            return
        }
        #expect(proposed.sid.utf8.count == 128)
        #expect(notice.id?.utf8.count == 128)
        let summaries = [
            Summary(
                kind: .call, account: "alice@localhost", chat: proposed.chat, from: proposed.from,
                call: .init(sid: proposed.sid, media: proposed.media), ts: 1_764_430_000),
            // A missed call: from is the caller's bare JID.
            Summary(
                kind: .message, account: "alice@localhost", chat: proposed.chat, from: proposed.chat,
                count: 999_999, missed: true, call: .init(sid: proposed.sid, media: proposed.media),
                ts: 1_764_430_000),
            Summary(
                kind: .message, account: "alice@localhost", chat: notice.chat, groupchat: true,
                from: notice.from, count: 999_999, mention: true, id: notice.id, ts: 1_764_430_000),
        ]
        for summary in summaries {
            #expect(summary.json.utf8.count + 512 <= Envelope.maxPlaintextLength, "\(summary.json.utf8.count) bytes")
        }
    }
}
