import Logging
public import XMLStream
public import XMPP

/// Routes each stanza for the component to the module that declared it, and answers what the host
/// answers itself: disco#info and disco#items (with the command list), ad-hoc commands, ping, version.
///
/// `route` returns the reply to send, if any; it has no socket, so it is tested with plain values.
public struct StanzaRouter: Sendable {
    public let context: ModuleContext
    private let modules: [any HostedModule]
    private let commands: AdHocSessions
    private let identities: [DiscoIdentity]
    private let features: [String]
    private let software: (name: String, version: String)

    /// `sessionKey` authenticates ad-hoc sessions' states: every instance of one component JID needs the
    /// same one (derived from the secret they share) for a session to go on wherever its stages land.
    public init(
        modules: [any HostedModule], context: ModuleContext, software: (name: String, version: String),
        sessionKey: AdHocSessionKey
    ) {
        self.modules = modules
        self.context = context
        self.software = software
        commands = AdHocSessions(commands: modules.flatMap { $0.commands(context: context) }, key: sessionKey)
        identities = modules.flatMap(\.discoIdentities)
        var features = [
            Namespace.discoInfo, Namespace.discoItems, Namespace.ping, Namespace.version,
            Namespace.commands,
        ]
        for feature in modules.flatMap(\.discoFeatures) where !features.contains(feature) {
            features.append(feature)
        }
        self.features = features
    }

    /// The reply to `stanza`, or nil when none is due.
    public func route(_ stanza: Element) async -> Element? {
        switch stanza.name {
        case "iq": return await routeIQ(stanza)
        case "message": return await routeMessage(stanza)
        default: return nil
        }
    }

    private func routeIQ(_ iq: Element) async -> Element? {
        let type = iq[attribute: "type"]
        guard type == "get" || type == "set" else { return nil }  // results and errors need no answer
        let payloads = iq.elements
        guard payloads.count == 1, let payload = payloads.first, let from = iq.from, iq[attribute: "id"] != nil else {
            return iq.errorReply(StanzaError(.badRequest, text: "an IQ request needs an id, a from and one payload"))
        }
        do {
            let result = try await answer(iq, payload: payload, type: type == "get" ? .get : .set, from: from)
            return iq.resultReply(payload: result)
        } catch let error as StanzaError {
            return iq.errorReply(error)
        } catch {
            context.logger.error("IQ handler failed: \(error)")
            return iq.errorReply(StanzaError(.internalServerError))
        }
    }

    private func answer(_ iq: Element, payload: Element, type: IQRoute.Kind, from: JID) async throws -> Element? {
        switch (type, payload.namespace, payload.name) {
        case (.get, Namespace.discoInfo?, "query"):
            return try discoInfo(node: payload[attribute: "node"], for: from)
        case (.get, Namespace.discoItems?, "query"):
            return try discoItems(node: payload[attribute: "node"], for: from)
        case (.get, Namespace.ping?, "ping"):
            return nil
        case (.get, Namespace.version?, "query"):
            return Element(
                "query", namespace: Namespace.version, [:],
                children: [
                    Element("name", namespace: Namespace.version, [:], text: software.name),
                    Element("version", namespace: Namespace.version, [:], text: software.version),
                ])
        case (.set, Namespace.commands?, "command"):
            return try await commands.execute(payload, from: from)
        default:
            for module in modules {
                for route in module.iqRoutes
                where route.kind == type && route.name == payload.name && route.namespace == payload.namespace {
                    return try await route.handler(iq, context)
                }
            }
            throw StanzaError(.serviceUnavailable)
        }
    }

    private func discoInfo(node: String?, for requester: JID) throws -> Element {
        switch node {
        case nil:
            return DiscoInfo(identities: identities, features: features).element
        case Namespace.commands?:
            // XEP-0030 wants an identity in every answer; XEP-0050 registers this one for the list.
            return DiscoInfo(
                node: node, identities: [DiscoIdentity(category: "automation", type: "command-list")],
                features: [Namespace.commands]
            ).element
        case let node?:
            guard let command = commands.commands.first(where: { $0.node == node }) else {
                throw StanzaError(.itemNotFound)
            }
            // XEP-0050 §2.3: a command the requester may not run is forbidden, not unknown.
            guard command.isAllowed(requester) else { throw StanzaError(.forbidden, type: .cancel) }
            return DiscoInfo(
                node: command.node,
                identities: [DiscoIdentity(category: "automation", type: "command-node", name: command.name)],
                features: [Namespace.commands, Namespace.dataForms]
            ).element
        }
    }

    private func discoItems(node: String?, for requester: JID) throws -> Element {
        switch node {
        case nil:
            return DiscoItems(items: []).element
        case Namespace.commands?:
            let items = commands.available(to: requester).map {
                DiscoItem(jid: context.componentJID, node: $0.node, name: $0.name)
            }
            return DiscoItems(node: Namespace.commands, items: items).element
        default:
            throw StanzaError(.itemNotFound)
        }
    }

    private func routeMessage(_ message: Element) async -> Element? {
        guard message[attribute: "type"] != "error" else { return nil }
        let namespaces = Set(message.elements.compactMap(\.namespace))
        for module in modules {
            for route in module.messageRoutes where namespaces.contains(route.namespace) {
                do {
                    try await route.handler(message, context)
                    return nil
                } catch let error as StanzaError {
                    return message.errorReply(error)
                } catch {
                    context.logger.error("message handler failed: \(error)")
                    return message.errorReply(StanzaError(.internalServerError))
                }
            }
        }
        return nil  // RFC 6120: a message nobody handles is dropped silently.
    }
}
