import Foundation
import Sealing
import Testing
import XMLStream
import XMPP

@testable import APush

@Suite struct BridgeReportTests {
    /// ejabberd's bridge sends its reports with no `type`: a normal message all the same.
    @Test(arguments: [Fixture.bridgeRegistered, Fixture.ejabberdBridgeRegistered])
    func theCapturedRegisteredNamesTheAccountTheTokenAndTheOptions(_ xml: String) throws {
        let report = try BridgeReport(message: try Element.parse(xml), servedDomains: ["localhost"])
        #expect(report.domain == "localhost")
        guard case .registered(let account, let token, let options)? = report.change else {
            Issue.record("expected registered, got \(String(describing: report.change))")
            return
        }
        #expect(account == "alice@localhost")
        #expect(token == "tok123")
        #expect(options.deviceKey == Base64.decode(Stanzas.fixtureKey))
    }

    @Test(arguments: [(Fixture.bridgeUnregistered, "tokR"), (Fixture.ejabberdBridgeUnregistered, "tok123")])
    func theCapturedUnregisteredNamesTheAccountAndTheToken(_ xml: String, token: String) throws {
        let report = try BridgeReport(message: try Element.parse(xml), servedDomains: ["localhost"])
        #expect(report.change == .unregistered(account: "alice@localhost", token: token))
    }

    @Test func unregisteredWithAnEmptyNodeMeansEveryToken() throws {
        let xml =
            "<message from='localhost'><unregistered xmlns='urn:xmpp:apush:bridge:0' account='Alice@localhost/x'>"
            + "<disable xmlns='urn:xmpp:push:0' node=''/></unregistered></message>"
        let report = try BridgeReport(message: try Element.parse(xml), servedDomains: ["localhost"])
        #expect(report.change == .unregistered(account: "alice@localhost", token: nil))
    }

    @Test func aRegisteredTokenLongerThanAnyDeviceTokenIsABadRequest() throws {
        let node = String(repeating: "t", count: RegistrationOptions.maximumTokenLength + 1)
        let xml = Fixture.bridgeRegistered.replacingOccurrences(of: "node='tok123'", with: "node='\(node)'")
        #expect(xml.contains(node))
        let error = #expect(throws: StanzaError.self) {
            try BridgeReport(message: try Element.parse(xml), servedDomains: ["localhost"])
        }
        #expect(error?.condition == .badRequest)
    }

    @Test func aMessageReportingNeitherChangesNothing() throws {
        let report = try BridgeReport(
            message: try Element.parse("<message from='localhost'><body>hi</body></message>"),
            servedDomains: ["localhost"])
        #expect(report.change == nil)
    }
}
