import Logging
import Sealing
import Store
import XMLStream
import XMPP

extension PushService {
    /// `registered` / `unregistered` from the server's bridge module (docs/wire-contract.md, Bridge stanzas).
    func handleBridge(_ message: Element, servedDomains: Set<String>, componentJID: JID) async throws {
        let report = try BridgeReport(message: message, servedDomains: servedDomains, componentJID: componentJID)
        try await answeringStoreFaults(during: "a bridge report") { try await apply(report) }
    }

    private func apply(_ report: BridgeReport) async throws {
        let at = now()
        switch report.change {
        case .registered(let account, let token, let options)?:
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
        case nil:
            break
        }
    }
}
