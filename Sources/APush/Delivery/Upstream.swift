import XMLStream
import XMPP

/// Publishes one sealed push to the App Server (docs/wire-contract.md, Output) and says what its answer means.
struct Upstream: Sendable {
    let sender: any StanzaSender
    let componentJID: JID
    let appServer: JID
    let timeout: Duration

    struct Fields: Sendable, Equatable {
        var envelope: String
        /// `voip`, `read` or `wake`; nil for a message.
        var kind: String?
        /// Messages only.
        var collapse: String?
    }

    func publish(node: String, pushModule: String, fields: Fields) async -> UpstreamOutcome {
        do {
            let answer = try await sender.request(
                Self.iq(
                    node: node, pushModule: pushModule, fields: fields,
                    from: componentJID, to: appServer),
                timeout: timeout)
            return UpstreamOutcome(answer: answer)
        } catch {
            return UpstreamOutcome(failure: error)
        }
    }

    static func iq(node: String, pushModule: String, fields: Fields, from: JID, to: JID) -> Element {
        var summary = DataForm(
            type: .submit, formType: Namespace.pushSummary,
            fields: [.value("apushEncrypted", fields.envelope)])
        if let kind = fields.kind { summary.fields.append(.value("apushKind", kind)) }
        if let collapse = fields.collapse { summary.fields.append(.value("apushCollapse", collapse)) }
        let options = DataForm.submit(formType: Namespace.pubsubPublishOptions, values: ["pushModule": pushModule])
        let pubsub = Element(
            "pubsub", namespace: Namespace.pubsub, [:],
            children: [
                Element(
                    "publish", namespace: Namespace.pubsub, ["node": node],
                    children: [
                        Element(
                            "item", namespace: Namespace.pubsub, [:],
                            children: [
                                Element("notification", namespace: Namespace.push, [:], children: [summary.element])
                            ])
                    ]),
                Element("publish-options", namespace: Namespace.pubsub, [:], children: [options.element]),
            ])
        // No id: the link assigns one to each request.
        return Element(
            "iq", namespace: Namespace.componentAccept,
            ["type": "set", "from": from.description, "to": to.description], children: [pubsub])
    }
}
