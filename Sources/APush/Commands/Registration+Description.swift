import Sealing
import Store

extension Registration {
    /// How a registration is named to people: never the token itself.
    var fingerprint: String { Fingerprint.of(token) }

    var kindsDescription: String {
        var kinds: [String] = []
        if takesMessages { kinds.append("messages") }
        if takesCalls { kinds.append("calls") }
        if takesReads { kinds.append("reads") }
        return kinds.joined(separator: ", ")
    }

    var lastErrorDescription: String {
        guard let lastError else { return "none" }
        return "\(lastError) at \(TimeFormat.describe(lastErrorAt))"
    }

    /// One line for a list: fingerprint, module, kinds and history.
    var summaryLine: String { "\(fingerprint) · \(moduleAndHistory)" }

    /// One line for an operator's list: the summary with the account and domain.
    var listingLine: String {
        "\(fingerprint) · \(account ?? "(no account)") · \(domain) · \(moduleAndHistory)"
    }

    private var moduleAndHistory: String {
        "\(pushModule) · \(kindsDescription) · created \(TimeFormat.describe(createdAt))"
            + " · last push \(TimeFormat.describe(lastPushAt)) · last error \(lastErrorDescription)"
    }
}
