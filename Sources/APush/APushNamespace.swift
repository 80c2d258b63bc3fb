/// The namespaces this project defines (docs/wire-contract.md): a stable interface. Those of XMPP and its XEPs
/// live in XMPP's `Namespace`.
enum APushNamespace {
    /// Stanzas of the server-side bridge: `registered`, `unregistered`, `account`.
    static let bridge = "urn:xmpp:apush:bridge:0"
    /// The form type of the account policy (docs/wire-contract.md, Policies).
    static let policyForm = "urn:xmpp:apush:policy:0"
    /// The prefix of every ad-hoc command node.
    static let commands = "urn:xmpp:apush:0"
}
