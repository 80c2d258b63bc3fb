import XMPP

@testable import APush

/// The input is one stanza, read as the bridge module's `registered` / `unregistered` report. What it
/// accepts must name a bare account JID and a non-empty token; a registration it refuses is echoed
/// without its form.
private let component = try! JID("apush.localhost")

func fuzzBridge(_ input: [UInt8]) {
    guard let stanza = parsedElement(input) else { return }
    let report: BridgeReport
    do {
        report = try BridgeReport(message: stanza, servedDomains: ["localhost"], componentJID: component)
    } catch {
        if let echo = error.payload {
            require(error.condition == .notAcceptable, "a refusal with an echo is \(error.condition)")
            require(echo.findElement("{urn:xmpp:push:0}enable/{jabber:x:data}x") == nil, "a refusal echoed the form")
        }
        return
    }
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
