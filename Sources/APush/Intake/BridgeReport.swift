import XMLStream
import XMPP

/// What one stanza of the server's bridge module reports (docs/wire-contract.md, Bridge stanzas), checked but not acted
/// on:
/// pure, so the whole of its parsing can be tested and fuzzed without a store.
struct BridgeReport: Sendable, Equatable {
    enum Change: Sendable, Equatable {
        case registered(account: String, token: String, options: RegistrationOptions)
        /// Without a token: every registration of the account.
        case unregistered(account: String, token: String?)
    }

    /// The served domain that sent it.
    var domain: String
    /// Nil when the stanza reports neither (it is ignored).
    var change: Change?

    /// Anything malformed is a `modify`/`bad-request` saying what is wrong; a sender that is not a
    /// served domain is `forbidden`; a registration the component cannot use (towards another JID than
    /// `componentJID`, without a form, with options it refuses) is refused with it echoed.
    init(message: Element, servedDomains: Set<String>, componentJID: JID) throws(StanzaError) {
        guard let from = message.from, from.isDomainOnly, servedDomains.contains(from.domainpart) else {
            throw StanzaError(.forbidden, text: "bridge stanzas are accepted only from the served server domains")
        }
        domain = from.domainpart
        if let registered = message.findElement(Self.registeredPath) {
            guard let account = registered[attribute: "account"].flatMap(EventClassifier.bareJID),
                let token = registered.findString(Self.enabledNodePath), !token.isEmpty
            else {
                throw StanzaError(.badRequest, text: "registered needs an account and an enable with a node")
            }
            do throws(StanzaError) {
                if let service = registered.findString(Self.enabledServicePath),
                    (try? JID(service)) != componentJID.bare
                {
                    throw StanzaError(.badRequest, text: "registered names \(service), not the component")
                }
                guard let formElement = registered.findElement(Self.enabledFormPath) else {
                    throw StanzaError(.badRequest, text: "registered has no publish-options form")
                }
                let form: DataForm
                do {
                    form = try DataForm(element: formElement)
                } catch {
                    throw StanzaError(.badRequest, text: "registered: \(error)")
                }
                change = .registered(
                    account: account, token: try RegistrationOptions.token(token),
                    options: try RegistrationOptions(form: form))
            } catch {
                throw Self.refusal(of: registered, because: error.text ?? error.condition.rawValue)
            }
        } else if let unregistered = message.findElement(Self.unregisteredPath) {
            guard let account = unregistered[attribute: "account"].flatMap(EventClassifier.bareJID) else {
                throw StanzaError(.badRequest, text: "unregistered needs an account")
            }
            let token = unregistered.findString(Self.disabledNodePath).flatMap { $0.isEmpty ? nil : $0 }
            change = .unregistered(account: account, token: token)
        }
    }

    /// A registration the component cannot use, refused so that the bridge disables it: the
    /// `registered` echoed (its account, and its enable's jid and node, without the form), with
    /// `modify`/`not-acceptable`.
    private static func refusal(of registered: Element, because reason: String) -> StanzaError {
        let enable = registered.child("enable", namespace: Namespace.push)
        let echo = Element(
            "registered", namespace: APushNamespace.bridge, ["account": registered[attribute: "account"]],
            children: [
                Element(
                    "enable", namespace: Namespace.push,
                    ["jid": enable?[attribute: "jid"], "node": enable?[attribute: "node"]])
            ])
        return StanzaError(.notAcceptable, type: .modify, text: reason, payload: echo)
    }

    private static let registeredPath = "{\(APushNamespace.bridge)}registered"
    private static let enabledNodePath = "{\(Namespace.push)}enable@node"
    private static let enabledServicePath = "{\(Namespace.push)}enable@jid"
    private static let enabledFormPath = "{\(Namespace.push)}enable/{\(Namespace.dataForms)}x"
    private static let unregisteredPath = "{\(APushNamespace.bridge)}unregistered"
    private static let disabledNodePath = "{\(Namespace.push)}disable@node"
}
