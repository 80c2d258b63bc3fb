import XMLStream
import XMPP

/// Asks a served server which of its accounts still exist (docs/wire-contract.md, Bridge stanzas:
/// `accounts`), through the link as `Upstream` asks the App Server (`StanzaSender.request`). The
/// server's bridge answers only the component.
struct AccountsQuery: Sendable {
    let sender: any StanzaSender
    let componentJID: JID
    let timeout: Duration

    /// The most accounts one request may name: the bridges answer no more.
    static let maximumAccounts = 100

    /// The accounts the server says do not exist, or nil when it gave no answer to go by (an error, a
    /// timeout, no link, or an answer that is not one): then none of them may be taken for gone.
    func gone(_ accounts: [String], on domain: JID) async -> Set<String>? {
        precondition(accounts.count <= Self.maximumAccounts, "at most \(Self.maximumAccounts) accounts a request")
        guard
            let answer = try? await sender.request(Self.iq(accounts, from: componentJID, to: domain), timeout: timeout)
        else { return nil }
        return Self.gone(in: answer, asked: accounts)
    }

    static func iq(_ accounts: [String], from: JID, to: JID) -> Element {
        let query = Element(
            "accounts", namespace: APushNamespace.bridge, [:],
            children: accounts.map { Element("account", namespace: APushNamespace.bridge, ["jid": $0]) })
        // No id: the link assigns one to each request.
        return Element(
            "iq", namespace: Namespace.componentAccept,
            ["type": "get", "from": from.description, "to": to.description],
            children: [query])
    }

    /// The asked accounts that `answer` marks `exists='false'`; nil for an answer that is not a result
    /// carrying `accounts`. Fails towards keeping: an account the answer leaves out, marks otherwise or
    /// did not ask about is never gone.
    static func gone(in answer: Element, asked: [String]) -> Set<String>? {
        guard answer.iqType == .result, let accounts = answer.child("accounts", namespace: APushNamespace.bridge)
        else { return nil }
        let asked = Set(asked)
        return Set(
            accounts.elements.compactMap { account in
                guard account.name == "account", account.namespace == APushNamespace.bridge,
                    account[attribute: "exists"] == "false", let jid = account[attribute: "jid"], asked.contains(jid)
                else { return nil }
                return jid
            })
    }
}
