import HTTPServer
import Logging

/// What /health says: healthy when the component link is up and the store answers. The body names
/// no token, key or account, only states and totals.
struct HealthReport: Sendable, Equatable {
    var linkUp: Bool
    /// The total of registrations when the store answered; nil when it failed.
    var registrations: Int?
    var version: String
    var uptimeSeconds: Int
    var inFlight: Int
    var inFlightLimit: Int

    var isHealthy: Bool { linkUp && registrations != nil }

    var response: HTTPResponse {
        var json = JSONObjectWriter()
        json.add("status", isHealthy ? "ok" : "degraded")
        json.add("link", linkUp ? "up" : "down")
        json.add("store", registrations == nil ? "error" : "ok")
        json.add("version", version)
        json.add("uptimeSeconds", uptimeSeconds)
        if let registrations { json.add("registrations", registrations) } else { json.addRaw("registrations", "null") }
        json.add("inFlight", inFlight)
        json.add("inFlightLimit", inFlightLimit)
        return HTTPResponse(
            isHealthy ? .ok : .serviceUnavailable, contentType: "application/json", body: json.finish() + "\n")
    }
}
