import XMLStream
import XMPP

/// What one stanza of the server's bridge module reports (registrations, and the account's other sessions) (docs/wire-contract.md, Bridge stanzas), checked but not acted
/// on:
/// pure, so the whole of its parsing can be tested and fuzzed without a store.
struct BridgeReport: Sendable, Equatable {
    enum Change: Sendable, Equatable {
        /// `resource`: the session that enabled push, when the bridge names it.
        case registered(account: String, token: String, options: RegistrationOptions, resource: String?)
        /// Without a token: every registration of the account.
        case unregistered(account: String, token: String?)
        /// A session of the account without push became available (`show` absent or `chat`), or not
        /// (away, extended away, busy, unavailable, closed or hibernated).
        case presence(account: String, resource: String, available: Bool)
        /// The account was active on a session without push (sent a message, a marker, a chat state
        /// `active`/`composing`, a XEP-0490 display).
        case active(account: String)
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
                    options: try RegistrationOptions(form: form),
                    resource: registered[attribute: "resource"].flatMap(Self.resource))
            } catch {
                throw Self.refusal(of: registered, because: error.text ?? error.condition.rawValue)
            }
        } else if let unregistered = message.findElement(Self.unregisteredPath) {
            guard let account = unregistered[attribute: "account"].flatMap(EventClassifier.bareJID) else {
                throw StanzaError(.badRequest, text: "unregistered needs an account")
            }
            let token = unregistered.findString(Self.disabledNodePath).flatMap { $0.isEmpty ? nil : $0 }
            change = .unregistered(account: account, token: token)
        } else if let presence = message.findElement(Self.presencePath) {
            let account = try Self.account(of: presence, on: domain)
            guard let resource = presence[attribute: "resource"].flatMap(Self.resource) else {
                throw StanzaError(.badRequest, text: "presence needs the session's resource")
            }
            guard let available = presence[attribute: "available"].flatMap(Self.boolean) else {
                throw StanzaError(.badRequest, text: "presence needs available='true' or 'false'")
            }
            change = .presence(account: account, resource: resource, available: available)
        } else if let active = message.findElement(Self.activePath) {
            change = .active(account: try Self.account(of: active, on: domain))
        }
    }

    /// The ordering key of a report: every report of one account is decided in the order the server
    /// sent them (an `available` overtaken by the `false` after it would hold pushes back until the
    /// session spoke again). Nil for anything else.
    static func orderingKey(of message: Element) -> String? {
        guard message.name == "message",
            let report = message.elements.first(where: { $0.namespace == APushNamespace.bridge }),
            let account = report[attribute: "account"]
        else { return nil }
        return "bridge \(message[attribute: "from"] ?? "") \(account)"
    }

    /// The `account` of a session report: a bare JID of the reporting domain (a server speaks only of
    /// its own accounts).
    private static func account(of report: Element, on domain: String) throws(StanzaError) -> String {
        guard let text = report[attribute: "account"], let account = try? JID(text), account.isBare,
            account.localpart != nil, account.domainpart == domain
        else {
            throw StanzaError(.badRequest, text: "\(report.name) needs an account: a bare JID of \(domain)")
        }
        return account.description
    }

    /// A resource as a JID has it (RFC 7622: at most 1,023 bytes), else nil.
    private static func resource(_ text: String) -> String? {
        (try? JID(localpart: "a", domainpart: "a", resourcepart: text))?.resourcepart
    }

    private static func boolean(_ text: String) -> Bool? {
        switch text {
        case "true", "1": true
        case "false", "0": false
        default: nil
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
    private static let presencePath = "{\(APushNamespace.bridge)}presence"
    private static let activePath = "{\(APushNamespace.bridge)}active"
}
