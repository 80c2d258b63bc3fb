import Foundation
import Sealing
import Testing
import XMLStream
import XMPP

@testable import APush

@Suite struct BridgeReportTests {
    static let component = try! JID("apush.localhost")

    /// ejabberd's bridge sends its reports with no `type`: a normal message all the same.
    @Test(arguments: [Fixture.bridgeRegistered, Fixture.ejabberdBridgeRegistered])
    func theCapturedRegisteredNamesTheAccountTheTokenAndTheOptions(_ xml: String) throws {
        let report = try BridgeReport(
            message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        #expect(report.domain == "localhost")
        guard case .registered(let account, let token, let options, let resource)? = report.change else {
            Issue.record("expected registered, got \(String(describing: report.change))")
            return
        }
        #expect(account == "alice@localhost")
        #expect(resource == "phone")
        #expect(token == "tok123")
        #expect(options.deviceKey == Base64.decode(Stanzas.fixtureKey))
    }

    @Test(arguments: [(Fixture.bridgeUnregistered, "tokR"), (Fixture.ejabberdBridgeUnregistered, "tok123")])
    func theCapturedUnregisteredNamesTheAccountAndTheToken(_ xml: String, token: String) throws {
        let report = try BridgeReport(
            message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        #expect(report.change == .unregistered(account: "alice@localhost", token: token))
    }

    @Test func unregisteredWithAnEmptyNodeMeansEveryToken() throws {
        let xml =
            "<message from='localhost'><unregistered xmlns='urn:xmpp:apush:bridge:0' account='Alice@localhost/x'>"
            + "<disable xmlns='urn:xmpp:push:0' node=''/></unregistered></message>"
        let report = try BridgeReport(
            message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        #expect(report.change == .unregistered(account: "alice@localhost", token: nil))
    }

    @Test func aRegisteredTokenLongerThanAnyDeviceTokenIsRefusedWithTheRegistrationEchoed() throws {
        let node = String(repeating: "t", count: RegistrationOptions.maximumTokenLength + 1)
        let xml = Fixture.bridgeRegistered.replacingOccurrences(of: "node='tok123'", with: "node='\(node)'")
        #expect(xml.contains(node))
        let error = #expect(throws: StanzaError.self) {
            try BridgeReport(
                message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .notAcceptable)
        #expect(error?.payload?.findString("{urn:xmpp:push:0}enable@node") == node)
    }

    /// What the component cannot use is refused when it is registered, in the shape the bridges act on
    /// (docs/wire-contract.md, Bridge stanzas): the registration echoed without its form, then the error.
    @Test(arguments: [
        ("", "no publish-options form"),
        (
            "<x xmlns='jabber:x:data' type='submit'><field var='pushModule'><value>apush</value></field></x>",
            "apushEncryptionPublicKey"
        ),
        (
            "<x xmlns='jabber:x:data' type='submit'><field var='pushModule'><value> </value></field>"
                + "<field var='apushEncryptionPublicKey'><value>q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8M=</value></field></x>",
            "pushModule"
        ),
    ])
    func aRegistrationTheComponentCannotUseIsRefusedWithItEchoed(form: String, why: String) throws {
        let xml =
            "<message type='normal' id='r1' from='localhost' to='apush.localhost'>"
            + "<registered xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' resource='phone'>"
            + "<enable xmlns='urn:xmpp:push:0' jid='apush.localhost' node='TOKEN'>\(form)</enable></registered></message>"
        let message = try Element.parse(xml)
        let error = try #require(
            #expect(throws: StanzaError.self) {
                try BridgeReport(message: message, servedDomains: ["localhost"], componentJID: Self.component)
            })
        #expect(error.text?.contains(why) == true)
        let reply = try #require(message.errorReply(error))
        var expectedError = StanzaError(.notAcceptable, type: .modify, text: error.text).element
        expectedError.namespace = "jabber:component:accept"
        #expect(
            reply.serialized(parentNamespace: "jabber:component:accept")
                == "<message type='error' id='r1' from='apush.localhost' to='localhost'>"
                + "<registered xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost'>"
                + "<enable xmlns='urn:xmpp:push:0' jid='apush.localhost' node='TOKEN'/></registered>"
                + expectedError.serialized(parentNamespace: "jabber:component:accept") + "</message>")
    }

    @Test(arguments: ["apush.localhost/x", "x@apush.localhost", "other.localhost"])
    func aRegistrationTowardsAnotherJIDIsRefusedWithItEchoed(_ service: String) throws {
        let xml = Fixture.bridgeRegistered.replacingOccurrences(of: "jid='apush.localhost'", with: "jid='\(service)'")
        #expect(xml.contains(service))
        let error = #expect(throws: StanzaError.self) {
            try BridgeReport(
                message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .notAcceptable)
        #expect(error?.payload?.findString("{urn:xmpp:push:0}enable@jid") == service)
    }

    @Test func aRegistrationTowardsTheComponentInAnotherCaseIsTaken() throws {
        let xml = Fixture.bridgeRegistered.replacingOccurrences(
            of: "jid='apush.localhost'", with: "jid='APUSH.localhost'")
        let report = try BridgeReport(
            message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        guard case .registered(_, let token, _, _)? = report.change else {
            Issue.record("not a registration: \(String(describing: report.change))")
            return
        }
        #expect(token == "tok123")
    }

    @Test func aRegisteredWithoutAnAccountOrNodeIsABadRequestWithNothingToEcho() throws {
        let xml =
            "<message from='localhost'><registered xmlns='urn:xmpp:apush:bridge:0'>"
            + "<enable xmlns='urn:xmpp:push:0' jid='apush.localhost' node='t'/></registered></message>"
        let error = #expect(throws: StanzaError.self) {
            try BridgeReport(
                message: try Element.parse(xml), servedDomains: ["localhost"], componentJID: Self.component)
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.payload == nil)
    }

    @Test func aMessageReportingNeitherChangesNothing() throws {
        let report = try BridgeReport(
            message: try Element.parse("<message from='localhost'><body>hi</body></message>"),
            servedDomains: ["localhost"], componentJID: Self.component)
        #expect(report.change == nil)
    }

    // MARK: The account's other sessions

    private static func report(_ payload: String, from: String = "localhost") throws -> BridgeReport {
        try BridgeReport(
            message: try Element.parse("<message from='\(from)' to='apush.localhost'>\(payload)</message>"),
            servedDomains: ["localhost"], componentJID: component)
    }

    @Test(arguments: [("true", true), ("false", false), ("1", true), ("0", false)])
    func presenceNamesTheAccountItsSessionAndWhetherItIsAvailable(_ value: String, available: Bool) throws {
        let report = try Self.report(
            "<presence xmlns='urn:xmpp:apush:bridge:0' account='Alice@localhost' resource='laptop' available='\(value)'/>"
        )
        #expect(report.change == .presence(account: "alice@localhost", resource: "laptop", available: available))
    }

    @Test func activeNamesTheAccount() throws {
        let report = try Self.report("<active xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost'/>")
        #expect(report.change == .active(account: "alice@localhost"))
    }

    /// A server speaks only of its own accounts, each by its bare JID, and of a session by its resource.
    @Test(arguments: [
        "<active xmlns='urn:xmpp:apush:bridge:0'/>",
        "<active xmlns='urn:xmpp:apush:bridge:0' account='alice@other.example'/>",
        "<active xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost/laptop'/>",
        "<active xmlns='urn:xmpp:apush:bridge:0' account='localhost'/>",
        "<active xmlns='urn:xmpp:apush:bridge:0' account='@@'/>",
        "<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@other.example' resource='r' available='true'/>",
        "<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' available='true'/>",
        "<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' resource='' available='true'/>",
        "<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' resource='r'/>",
        "<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' resource='r' available='away'/>",
    ])
    func aMalformedSessionReportIsABadRequest(_ payload: String) throws {
        let error = #expect(throws: StanzaError.self) { try Self.report(payload) }
        #expect(error?.condition == .badRequest && error?.type == .modify)
    }

    @Test func aSessionReportFromAnythingButAServedDomainIsForbidden() throws {
        let error = #expect(throws: StanzaError.self) {
            try Self.report(
                "<active xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost'/>", from: "alice@localhost")
        }
        #expect(error?.condition == .forbidden)
    }

    @Test func aResourceLongerThanAJIDAllowsIsABadRequest() throws {
        let resource = String(repeating: "r", count: 1024)
        let error = #expect(throws: StanzaError.self) {
            try Self.report(
                "<presence xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' resource='\(resource)' available='true'/>"
            )
        }
        #expect(error?.condition == .badRequest)
    }

    /// Every report of one account is decided in the order the server sent them; publishes keep their
    /// own key.
    @Test func reportsOfOneAccountShareAnOrderingKey() throws {
        let presence = try Element.parse(
            "<message from='localhost'><presence xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost' "
                + "resource='laptop' available='true'/></message>")
        let active = try Element.parse(
            "<message from='localhost'><active xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost'/></message>")
        let other = try Element.parse(
            "<message from='localhost'><active xmlns='urn:xmpp:apush:bridge:0' account='bob@localhost'/></message>")
        let registered = try Element.parse(Fixture.bridgeRegistered)
        #expect(BridgeReport.orderingKey(of: presence) != nil)
        #expect(BridgeReport.orderingKey(of: presence) == BridgeReport.orderingKey(of: active))
        #expect(BridgeReport.orderingKey(of: presence) == BridgeReport.orderingKey(of: registered))
        #expect(BridgeReport.orderingKey(of: presence) != BridgeReport.orderingKey(of: other))
        #expect(BridgeReport.orderingKey(of: try Element.parse(Fixture.bridgeMessage)) == nil)
    }
}
