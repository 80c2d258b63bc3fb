import ComponentHost
import Foundation
import HTTPServer
import Testing

@testable import APush

@Suite struct HealthReportTests {
    private func report(role: LinkRole, registrations: Int?, httpAcceptFailures: Int = 0) -> HealthReport {
        HealthReport(
            role: role, registrations: registrations, version: "0.1.0", uptimeSeconds: 42, inFlight: 1,
            inFlightLimit: 512, httpAcceptFailures: httpAcceptFailures)
    }

    private func body(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func healthyWhenTheLinkIsUpAndTheStoreAnswers() throws {
        let response = report(role: .active, registrations: 7).response
        #expect(response.status == .ok)
        #expect(response.contentType == "application/json")
        let json = try body(response)
        #expect(json["status"] as? String == "ok")
        #expect(json["link"] as? String == "up")
        #expect(json["role"] as? String == "active")
        #expect(json["store"] as? String == "ok")
        #expect(json["version"] as? String == "0.1.0")
        #expect(json["uptimeSeconds"] as? Int == 42)
        #expect(json["registrations"] as? Int == 7)
        #expect(json["httpAcceptFailures"] as? Int == 0)
    }

    /// While accepting fails no probe gets through; the first one after says it happened.
    @Test func failedAcceptsAreShownWithoutMakingItUnhealthy() throws {
        let response = report(role: .active, registrations: 7, httpAcceptFailures: 2).response
        #expect(response.status == .ok)
        #expect(try body(response)["httpAcceptFailures"] as? Int == 2)
    }

    @Test func aStandbyIsHealthyWithItsLinkDownAndSaysSo() throws {
        let response = report(role: .standby, registrations: 7).response
        #expect(response.status == .ok)
        let json = try body(response)
        #expect(json["status"] as? String == "ok")
        #expect(json["link"] as? String == "down")
        #expect(json["role"] as? String == "standby")
    }

    @Test(arguments: [
        (LinkRole.connecting, 7 as Int?), (.active, nil), (.standby, nil), (.connecting, nil),
    ])
    func degradedWithTheSameFieldsOtherwise(role: LinkRole, registrations: Int?) throws {
        let response = report(role: role, registrations: registrations).response
        #expect(response.status == .serviceUnavailable)
        let json = try body(response)
        #expect(json["status"] as? String == "degraded")
        #expect(json["link"] as? String == (role == .active ? "up" : "down"))
        #expect(json["role"] as? String == role.rawValue)
        #expect(json["store"] as? String == (registrations == nil ? "error" : "ok"))
        #expect(
            Set(json.keys).isSuperset(of: [
                "status", "link", "role", "store", "version", "uptimeSeconds", "registrations",
            ]))
    }
}
