import Store
import Testing
import XMLStream
import XMPP

@testable import APush

@Suite struct IncomingPublishTests {
    static let component = try! JID("apush.localhost")

    static let allCaptures = [
        Fixture.stockMessage, Fixture.stockCall, Fixture.stockPresence, Fixture.stockDisplayedCarbon,
        Fixture.ejabberdMessage, Fixture.ejabberdEmpty, Fixture.bridgeMessage, Fixture.bridgeCall,
        Fixture.bridgeCallAgain, Fixture.bridgePresence, Fixture.bridgeDisplayedCarbon, Fixture.bridgeBodyCarbon,
        Fixture.bridgeOwnDisplayed, Fixture.bridgeOfflineMessage, Fixture.ejabberdBridgeMessage,
        Fixture.ejabberdBridgeCall, Fixture.ejabberdBridgeOwnDisplayed, Fixture.ejabberdBridgeOwnBody,
        Fixture.ejabberdBridgeHibernatedWake,
    ]

    @Test(arguments: allCaptures)
    func everyCapturedPublishParsesWithItsOptions(_ xml: String) throws {
        let publish = try IncomingPublish(
            iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        #expect(publish.domain == "localhost")
        #expect(publish.token == "tok123")
        #expect(publish.notification?.name == "notification")
        let options = try #require(publish.options)
        #expect(["apush", "apns"].contains(options.pushModule))
        #expect(options.deviceKey.count == 32)
        #expect(options.calls == .also)
        #expect(options.wantsReads)
    }

    @Test(arguments: allCaptures)
    func everyCapturedPublishParsesWithoutItsOptions(_ xml: String) throws {
        var iq = try Element.parse(xml)
        let pubsub = try #require(iq.findElement("{http://jabber.org/protocol/pubsub}pubsub"))
        var stripped = pubsub
        stripped.children = pubsub.children.filter {
            if case .element(let child) = $0 { return child.name != "publish-options" }
            return true
        }
        iq.children = [.element(stripped)]
        let publish = try IncomingPublish(iq: iq, servedDomains: ["localhost"], componentJID: Self.component)
        #expect(publish.options == nil)
        #expect(publish.token == "tok123")
    }

    @Test(arguments: ["example.org", "alice@localhost", "localhost/resource", "bob@example.org/x"])
    func aPublishFromAnythingButAServedDomainIsForbidden(_ from: String) throws {
        let xml = Stanzas.publish(from: from, notification: "", options: nil)
        let error = #expect(throws: StanzaError.self) {
            try IncomingPublish(iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .forbidden)
        #expect(error?.type == .auth)
    }

    @Test(arguments: [
        "apush.localhost/x", "x@apush.localhost", "x@apush.localhost/y", "localhost", "other.localhost", nil,
    ])
    func aPublishToAnythingButTheComponentsBareJIDIsRefusedAsAnUnknownNode(_ to: String?) throws {
        var iq = try Element.parse(Stanzas.publish(notification: "", options: Stanzas.Options(key: "AAAA")))
        iq[attribute: "to"] = to
        let error = #expect(throws: StanzaError.self) {
            try IncomingPublish(iq: iq, servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .itemNotFound)
        #expect(error?.type == .cancel)
    }

    @Test func aPublishToTheComponentsJIDInAnotherCaseIsTaken() throws {
        var iq = try Element.parse(Stanzas.publish(notification: "", options: nil))
        iq[attribute: "to"] = "APUSH.localhost"
        #expect(
            try IncomingPublish(iq: iq, servedDomains: ["localhost"], componentJID: Self.component).token == "tok123")
    }

    @Test func aNodeLongerThanAnyDeviceTokenIsABadRequest() throws {
        let node = String(repeating: "t", count: RegistrationOptions.maximumTokenLength + 1)
        let xml = Stanzas.publish(node: node, notification: "", options: nil)
        let error = #expect(throws: StanzaError.self) {
            try IncomingPublish(iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .badRequest)
    }

    @Test func aPublishWithoutFromIsForbidden() throws {
        let xml =
            "<iq type='set' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'><publish node='t'/></pubsub></iq>"
        let error = #expect(throws: StanzaError.self) {
            try IncomingPublish(iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .forbidden)
    }

    @Test(arguments: [
        "<iq type='set' from='localhost' to='apush.localhost' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'><publish/></pubsub></iq>",
        "<iq type='set' from='localhost' to='apush.localhost' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'><publish node=''/></pubsub></iq>",
        "<iq type='set' from='localhost' to='apush.localhost' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'/></iq>",
    ])
    func aPublishWithoutANodeIsABadRequest(_ xml: String) throws {
        let error = #expect(throws: StanzaError.self) {
            try IncomingPublish(iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.contains("node") == true)
    }

    @Test func badPublishOptionsAreABadRequestNamingTheField() throws {
        let options = Stanzas.Options(key: "AAAA")
        let xml = Stanzas.publish(notification: "", options: options)
        let error = #expect(throws: StanzaError.self) {
            try IncomingPublish(iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.contains("apushEncryptionPublicKey") == true)
    }

    @Test func aPublishWithoutANotificationHasNone() throws {
        let xml =
            "<iq type='set' from='localhost' to='apush.localhost' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'>"
            + "<publish node='t'><item/></publish></pubsub></iq>"
        let publish = try IncomingPublish(
            iq: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        #expect(publish.notification == nil)
        #expect(publish.options == nil)
    }
}
