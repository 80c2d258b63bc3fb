import Testing
import XMLStream
import XMPP

@Suite struct DiscoTests {
    @Test func writesTheAnswerEjabberdAccepted() {
        // ejabberd-23.01-stock.md: the component's disco#info answer to mod_delegation.
        let info = DiscoInfo(
            node: "urn:xmpp:delegation:1::urn:xmpp:push:0",
            identities: [DiscoIdentity(category: "pubsub", type: "push", name: "apush")],
            features: [Namespace.push])
        #expect(
            info.element.serialized()
                == "<query xmlns='http://jabber.org/protocol/disco#info' node='urn:xmpp:delegation:1::urn:xmpp:push:0'>"
                + "<identity category='pubsub' type='push' name='apush'/><feature var='urn:xmpp:push:0'/></query>")
        let captured = Fixtures.ejabberdDiscoReply.findElement("{http://jabber.org/protocol/disco#info}query")
        #expect(info.element == captured)
    }

    @Test func readsTheCapturedAnswer() throws {
        let element = try #require(
            Fixtures.ejabberdDiscoReply.findElement("{http://jabber.org/protocol/disco#info}query"))
        let info = try DiscoInfo(element: element)
        #expect(info.node == "urn:xmpp:delegation:1::urn:xmpp:push:0")
        #expect(info.identities == [DiscoIdentity(category: "pubsub", type: "push", name: "apush")])
        #expect(info.hasFeature(Namespace.push))
        #expect(!info.hasFeature(Namespace.commands))
        let request = try DiscoInfo(
            element: try #require(
                Fixtures.ejabberdDiscoQuery.findElement("{http://jabber.org/protocol/disco#info}query")))
        #expect(request == DiscoInfo(node: "urn:xmpp:delegation:1::urn:xmpp:push:0", identities: [], features: []))
    }

    @Test func roundTripsWithExtensionForms() throws {
        let info = DiscoInfo(
            identities: [
                DiscoIdentity(category: "component", type: "generic", name: "Push", language: "en"),
                DiscoIdentity(category: "pubsub", type: "push"),
            ],
            features: [Namespace.discoInfo, Namespace.commands, Namespace.push],
            extensions: [
                DataForm(
                    type: .result, formType: "urn:xmpp:dataforms:softwareinfo",
                    fields: [.value("software", "apush-component")])
            ])
        #expect(try DiscoInfo(element: info.element) == info)
        #expect(
            info.element.findString(
                #"\{urn:xmpp:dataforms:softwareinfo}result@software\"#) == "apush-component")
        #expect(info.element.findString("identity<xml:lang=en>@name") == "Push")
    }

    @Test func roundTripsItems() throws {
        let items = DiscoItems(
            node: Namespace.commands,
            items: [
                DiscoItem(jid: try JID("apush.localhost"), node: "stats", name: "Statistics"),
                DiscoItem(jid: try JID("alice@localhost/phone")),
            ])
        #expect(
            items.element.serialized()
                == "<query xmlns='http://jabber.org/protocol/disco#items' node='http://jabber.org/protocol/commands'>"
                + "<item jid='apush.localhost' node='stats' name='Statistics'/><item jid='alice@localhost/phone'/></query>"
        )
        #expect(try DiscoItems(element: items.element) == items)
        #expect(try DiscoItems(element: DiscoItems(items: []).element).items.isEmpty)
    }

    @Test(
        arguments: [
            (Element("query", namespace: Namespace.discoItems), DiscoError.notADiscoQuery),
            (Element("info", namespace: Namespace.discoInfo), .notADiscoQuery),
            (
                stanza(node("query", xmlns: Namespace.discoInfo, node("identity", ["category": "pubsub"]))),
                .identityWithoutCategoryOrType
            ),
            (stanza(node("query", xmlns: Namespace.discoInfo, node("feature"))), .featureWithoutVariable),
            (
                stanza(node("query", xmlns: Namespace.discoInfo, node("x", xmlns: Namespace.dataForms))),
                .invalidExtension(.missingFormType)
            ),
        ] as [(Element, DiscoError)])
    func rejectsMalformedInfo(element: Element, expected: DiscoError) {
        #expect(throws: expected) { try DiscoInfo(element: element) }
    }

    @Test(
        arguments: [
            (Element("query", namespace: Namespace.discoInfo), DiscoError.notADiscoQuery),
            (stanza(node("query", xmlns: Namespace.discoItems, node("item", ["name": "x"]))), .itemWithoutJID),
            (
                stanza(node("query", xmlns: Namespace.discoItems, node("item", ["jid": "@bad"]))),
                .invalidItemJID(.emptyLocalpart)
            ),
        ] as [(Element, DiscoError)])
    func rejectsMalformedItems(element: Element, expected: DiscoError) {
        #expect(throws: expected) { try DiscoItems(element: element) }
    }
}
