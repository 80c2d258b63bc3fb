import XMLStream
import XMPP

/// A XEP-0357 publish from a served server: the node (the device token), the registration it
/// carries, and the notification to classify.
struct IncomingPublish: Sendable {
    var domain: String
    var token: String
    /// Nil when the server sent no publish-options (then the stored registration is used).
    var options: RegistrationOptions?
    var notification: Element?

    /// Checks the publish; anything malformed is a `modify`/`bad-request` saying what is wrong.
    ///
    /// Only a publish to the component's own bare JID is a registration's: one to another JID of its
    /// domain (`apush.example.org/x`, `x@apush.example.org`) is one the server's bridge may not have
    /// checked, and is refused `cancel`/`item-not-found`, which the server counts against that
    /// registration until it disables it.
    init(iq: Element, servedDomains: Set<String>, componentJID: JID) throws(StanzaError) {
        guard let from = iq.from, from.isDomainOnly, servedDomains.contains(from.domainpart) else {
            throw StanzaError(.forbidden, text: "publishes are accepted only from the served server domains")
        }
        guard iq.to == componentJID.bare else {
            throw StanzaError(
                .itemNotFound,
                text: "push nodes live at \(componentJID.bare) only, not at \(iq.toString ?? "no address")")
        }
        domain = from.domainpart
        guard let node = iq.findString(Self.nodePath), !node.isEmpty else {
            throw StanzaError(.badRequest, text: "the publish has no node")
        }
        token = try RegistrationOptions.token(node)
        notification = iq.findElement(Self.notificationPath)
        if let formElement = iq.findElement(Self.optionsPath) {
            let form: DataForm
            do {
                form = try DataForm(element: formElement)
            } catch {
                throw StanzaError(.badRequest, text: "publish-options: \(error)")
            }
            options = try RegistrationOptions(form: form)
        }
    }

    private static let nodePath = "{\(Namespace.pubsub)}pubsub/publish@node"
    private static let notificationPath = "{\(Namespace.pubsub)}pubsub/publish/item/{\(Namespace.push)}notification"
    private static let optionsPath = "{\(Namespace.pubsub)}pubsub/publish-options/{\(Namespace.dataForms)}x"
}
