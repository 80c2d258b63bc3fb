import ComponentHost
import HTTPServer
import Logging

/// What /health says: healthy when the store answers and the instance is active (its link up) or
/// standing by (another instance holds the link; this one takes over when it goes). The body names
/// no token, key or account, only states and totals.
struct HealthReport: Sendable, Equatable {
    var role: LinkRole
    /// The total of registrations when the store answered; nil when it failed.
    var registrations: Int?
    var version: String
    var uptimeSeconds: Int
    var inFlight: Int
    var inFlightLimit: Int
    /// How often the endpoint's accepting started to fail (no descriptor left, say): while it fails no
    /// probe gets through, so a probe after it is the first to tell.
    var httpAcceptFailures: Int

    var linkUp: Bool { role == .active }
    var isHealthy: Bool { role != .connecting && registrations != nil }

    var response: HTTPResponse {
        var json = JSONObjectWriter()
        json.add("status", isHealthy ? "ok" : "degraded")
        json.add("link", linkUp ? "up" : "down")
        json.add("role", role.rawValue)
        json.add("store", registrations == nil ? "error" : "ok")
        json.add("version", version)
        json.add("uptimeSeconds", uptimeSeconds)
        if let registrations { json.add("registrations", registrations) } else { json.addRaw("registrations", "null") }
        json.add("inFlight", inFlight)
        json.add("inFlightLimit", inFlightLimit)
        json.add("httpAcceptFailures", httpAcceptFailures)
        return HTTPResponse(
            isHealthy ? .ok : .serviceUnavailable, contentType: "application/json", body: json.finish() + "\n")
    }
}
