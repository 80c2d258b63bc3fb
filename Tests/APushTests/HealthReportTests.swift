import Foundation
import HTTPServer
import Testing

@testable import APush

@Suite struct HealthReportTests {
    private func report(linkUp: Bool, registrations: Int?) -> HealthReport {
        HealthReport(
            linkUp: linkUp, registrations: registrations, version: "0.1.0", uptimeSeconds: 42, inFlight: 1,
            inFlightLimit: 512)
    }

    private func body(_ response: HTTPResponse) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test func healthyWhenTheLinkIsUpAndTheStoreAnswers() throws {
        let response = report(linkUp: true, registrations: 7).response
        #expect(response.status == .ok)
        #expect(response.contentType == "application/json")
        let json = try body(response)
        #expect(json["status"] as? String == "ok")
        #expect(json["link"] as? String == "up")
        #expect(json["store"] as? String == "ok")
        #expect(json["version"] as? String == "0.1.0")
        #expect(json["uptimeSeconds"] as? Int == 42)
        #expect(json["registrations"] as? Int == 7)
    }

    @Test(arguments: [(false, 7 as Int?), (true, nil), (false, nil)])
    func degradedWithTheSameFieldsOtherwise(linkUp: Bool, registrations: Int?) throws {
        let response = report(linkUp: linkUp, registrations: registrations).response
        #expect(response.status == .serviceUnavailable)
        let json = try body(response)
        #expect(json["status"] as? String == "degraded")
        #expect(json["link"] as? String == (linkUp ? "up" : "down"))
        #expect(json["store"] as? String == (registrations == nil ? "error" : "ok"))
        #expect(
            Set(json.keys).isSuperset(of: ["status", "link", "store", "version", "uptimeSeconds", "registrations"]))
    }
}
