import Logging
import Sealing
import Store
public import XMLStream
import XMPP

extension PushService {
    /// `registered` / `unregistered` from the server's bridge module (PROTOCOL.md §2.2).
    func handleBridge(_ message: Element, servedDomains: Set<String>) async throws {
        guard let from = message.from, from.isDomainOnly, servedDomains.contains(from.domainpart) else {
            throw StanzaError(.forbidden, text: "bridge stanzas are accepted only from the served server domains")
        }
        let at = now()
        if let registered = message.findElement("{urn:xmpp:apush:bridge:0}registered") {
            guard let account = registered[attribute: "account"].flatMap(EventClassifier.bareJID),
                  let token = registered.findString("{urn:xmpp:push:0}enable@node"), !token.isEmpty,
                  let formElement = registered.findElement("{urn:xmpp:push:0}enable/{jabber:x:data}x") else {
                throw StanzaError(.badRequest, text: "registered needs an account and an enable with a node and a form")
            }
            let form: DataForm
            do {
                form = try DataForm(element: formElement)
            } catch {
                throw StanzaError(.badRequest, text: "registered: \(error)")
            }
            let options = try RegistrationOptions(form: form)
            // The client enabled again: a dead token may have come back to life, and the account's own
            // removal no longer holds (another account's does).
            try await store.exhume(token: token, pushModule: options.pushModule, account: account)
            let registration: Registration
            do {
                registration = try await store.register(
                    options.request(domain: from.domainpart, token: token, account: account),
                    freshCollapseKey: CollapseKey.random().bytes, now: at)
            } catch let error as StoreCapacityError {
                throw StanzaError(.resourceConstraint, text: "registered: \(error)")
            }
            statistics.count("registrations.registered")
            logger.info("registered \(Fingerprint.of(token)) for \(account) (\(registration.pushModule))")
        } else if let unregistered = message.findElement("{urn:xmpp:apush:bridge:0}unregistered") {
            guard let account = unregistered[attribute: "account"].flatMap(EventClassifier.bareJID) else {
                throw StanzaError(.badRequest, text: "unregistered needs an account")
            }
            let token = unregistered.findString("{urn:xmpp:push:0}disable@node").flatMap { $0.isEmpty ? nil : $0 }
            let removed = try await store.removeRegistrations(domain: from.domainpart, account: account, token: token)
            statistics.count("registrations.unregistered", by: Int64(removed.count))
            logger.info("unregistered \(removed.count) registration(s) of \(account)")
        }
    }
}
