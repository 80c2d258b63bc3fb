import XMPP

@testable import APush

/// The input is one stanza, read as the bridge module's `registered` / `unregistered` report. What it
/// accepts must name a bare account JID and a non-empty token.
func fuzzBridge(_ input: [UInt8]) {
    guard let stanza = parsedElement(input),
        let report = try? BridgeReport(message: stanza, servedDomains: ["localhost"])
    else { return }
    switch report.change {
    case .registered(let account, let token, let options)?:
        require(isBareJID(account), "registered accepted an account that is not a bare JID")
        require(!token.isEmpty, "registered accepted an empty token")
        _ = options.request(domain: report.domain, token: token, account: account)
    case .unregistered(let account, let token)?:
        require(isBareJID(account), "unregistered accepted an account that is not a bare JID")
        require(token != "", "unregistered accepted an empty token")
    case nil:
        break
    }
}

private func isBareJID(_ text: String) -> Bool {
    (try? JID(text))?.isBare == true
}
