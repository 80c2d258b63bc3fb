import Logging
import Sealing
import Synchronization
import Store
import XMLStream
import XMPP

extension PushService {
    /// `registered` / `unregistered`, and the account's other sessions (`presence`, `active`), from the
    /// server's bridge module (docs/wire-contract.md, Bridge stanzas).
    func handleBridge(_ message: Element, servedDomains: Set<String>, componentJID: JID) async throws {
        let report = try BridgeReport(message: message, servedDomains: servedDomains, componentJID: componentJID)
        // The account's reports read before this one are recorded first (`BridgeReport.orderingKey`).
        let turn = StanzaTurn.current
        await turn?.wait()
        recordSessions(report)
        turn?.end()
        try await answeringStoreFaults(during: "a bridge report") { try await apply(report) }
    }

    /// What a report tells of the account's other sessions (`AccountSessions`).
    private func recordSessions(_ report: BridgeReport) {
        switch report.change {
        case .registered(let account, _, _, let resource?)?:
            accountSessions.withLock { $0.sessionEnabledPush(account: account, resource: resource) }
        case .presence(let account, let resource, let available)?:
            accountSessions.withLock { $0.presence(of: account, resource: resource, available: available) }
        case .active(let account)?:
            let at = now()
            accountSessions.withLock { $0.activity(of: account, at: at) }
        default:
            break
        }
    }

    private func apply(_ report: BridgeReport) async throws {
        let at = now()
        switch report.change {
        case .registered(let account, let token, let options, _)?:
            // The client enabled again: a dead token may have come back to life, and the account's own
            // removal no longer holds (another account's does).
            try await store.exhume(token: token, pushModule: options.pushModule, account: account)
            let registration: Registration
            do {
                registration = try await store.register(
                    options.request(domain: report.domain, token: token, account: account),
                    freshCollapseKey: CollapseKey.random().bytes, now: at)
            } catch let error as StoreCapacityError {
                throw StanzaError(.resourceConstraint, text: "registered: \(error)")
            }
            statistics.count(.registered)
            logger.info("registered \(Fingerprint.of(token)) for \(account) (\(registration.pushModule))")
        case .unregistered(let account, let token)?:
            let removed = try await store.removeRegistrations(domain: report.domain, account: account, token: token)
            statistics.count(.unregistered, by: Int64(removed.count))
            logger.info("unregistered \(removed.count) registration(s) of \(account)")
        case .presence?, .active?, nil:
            break
        }
    }
}
