import XMPP

@testable import APush

/// The input is one stanza, read as the bridge module's `registered` / `unregistered` / `presence` / `active` report. What it
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
    case .registered(let account, let token, let options, let resource)?:
        require(isBareJID(account), "registered accepted an account that is not a bare JID")
        require(resource != "", "registered accepted an empty resource")
        require(!token.isEmpty, "registered accepted an empty token")
        _ = options.request(domain: report.domain, token: token, account: account)
    case .unregistered(let account, let token)?:
        require(isBareJID(account), "unregistered accepted an account that is not a bare JID")
        require(token != "", "unregistered accepted an empty token")
    case .presence(let account, let resource, _)?:
        require(isBareJID(account, of: report.domain), "presence accepted an account not of its domain")
        require((try? JID(localpart: "a", domainpart: "a", resourcepart: resource)) != nil, "presence: bad resource")
    case .active(let account)?:
        require(isBareJID(account, of: report.domain), "active accepted an account not of its domain")
    case nil:
        break
    }
    var sessions = AccountSessions(capacity: 4, sessionsPerAccount: 2)
    switch report.change {
    case .presence(let account, let resource, let available)?:
        sessions.presence(of: account, resource: resource, available: available)
        require(sessions.accounts.count <= 1, "one report recorded more than one account")
    case .active(let account)?:
        sessions.activity(of: account, at: 0)
        require(sessions.lastActivity(of: account) == 0, "active was not recorded")
    default:
        break
    }
}

private func isBareJID(_ text: String) -> Bool {
    (try? JID(text))?.isBare == true
}

private func isBareJID(_ text: String, of domain: String) -> Bool {
    guard let jid = try? JID(text) else { return false }
    return jid.isBare && jid.localpart != nil && jid.domainpart == domain
}
