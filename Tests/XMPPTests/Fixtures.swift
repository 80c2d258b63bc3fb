import XMLStream
import XMPP

// The real captures of Tests/Captures, transcribed into Elements until the XMLStream
// parser lands. `node` builds an element the way the parser resolves one: a child written without
// `xmlns:` takes its parent's namespace (see `stanza(_:)`), so queries see what they will see live.

/// An element; `xmlns: nil` means "inherits", resolved by `stanza(_:)`.
func node(
    _ name: String, xmlns: String? = nil, _ attributes: KeyValuePairs<String, String> = [:],
    text: String? = nil, _ children: Element...
) -> Element {
    var element = Element(name, namespace: xmlns, attributes: attributes.map { Attribute($0.key, $0.value) })
    for child in children { element.append(child) }
    if let text { element.append(text: text) }
    return element
}

func node(_ name: String, xmlns: String? = nil, _ children: Element...) -> Element {
    var element = Element(name, namespace: xmlns)
    for child in children { element.append(child) }
    return element
}

/// Resolves inherited namespaces from `streamNamespace` down, as the stream parser does.
func stanza(_ element: Element, streamNamespace: String = Namespace.componentAccept) -> Element {
    var resolved = element
    resolved.namespace = element.namespace ?? streamNamespace
    resolved.children = element.children.map { child in
        guard case .element(let inner) = child else { return child }
        return .element(stanza(inner, streamNamespace: resolved.namespace!))
    }
    return resolved
}

/// `<field var=… [type=…]><value/>…</field>` in the form's namespace.
func field(_ variable: String, type: String? = nil, label: String? = nil, _ values: String...) -> Element {
    var element = node("field", ["var": variable])
    if let type { element[attribute: "type"] = type }
    if let label { element[attribute: "label"] = label }
    for value in values { element.append(node("value", text: value)) }
    return element
}

enum Fixtures {
    static let publicKey = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8M="
    static let publicKeyBytes: [UInt8] = [
        171, 205, 239, 18, 52, 86, 120, 154, 188, 222, 241, 35, 69, 103, 137, 171,
        205, 239, 18, 52, 86, 120, 154, 188, 222, 241, 35, 69, 103, 137, 171, 195,
    ]

    static func publishOptions(pushModule: String = "apush", key: String = publicKey, flag: String = "1") -> Element {
        node(
            "x", xmlns: Namespace.dataForms, ["type": "submit"],
            field("FORM_TYPE", Namespace.pubsubPublishOptions), field("pushModule", pushModule),
            field("apushEncryptionPublicKey", key), field("apushCalls", flag), field("apushRead", flag))
    }

    static func summary(sender: String? = "bob@localhost/laptop", body: String? = "New Message!") -> Element {
        node(
            "x", xmlns: Namespace.dataForms, ["type": "form"],
            field("FORM_TYPE", type: "hidden", "urn:xmpp:push:summary"),
            field("message-count", type: "text-single", "1"),
            field("pending-subscription-count", type: "text-single"),
            sender.map { field("last-message-sender", type: "jid-single", $0) }
                ?? field("last-message-sender", type: "jid-single"),
            body.map { field("last-message-body", type: "text-single", $0) }
                ?? field("last-message-body", type: "text-single"))
    }

    static func publish(
        id: String, node tokenNode: String = "tok123", notification: Element...,
        options: Element = publishOptions()
    ) -> Element {
        var content = node("notification", xmlns: Namespace.push)
        for child in notification { content.append(child) }
        return stanza(
            node(
                "iq", ["id": id, "from": "localhost", "type": "set", "to": "apush.localhost"],
                node(
                    "pubsub", xmlns: Namespace.pubsub,
                    node("publish", ["node": tokenNode], node("item", content)),
                    node("publish-options", options))))
    }

    /// prosody-0.12-stock.xml.txt, plain-errors.log: stock mod_cloud_notify, summary only.
    static let prosodyStockPublish = publish(
        id: "20ab3be121224fa65a880106ccfceb8b604b04115231312b10068684274d8999", notification: summary())

    /// prosody-0.12-bridge.xml.txt, bridge-ackdelay.log: the bridge adds the account and the message.
    static let prosodyBridgePublish = publish(
        id: "e37709e62bf6bb5928a81fbc9b13fefab5658e3aa0a31914a615b79072971ff4",
        notification: summary(),
        node("account", xmlns: "urn:xmpp:apush:bridge:0", ["jid": "alice@localhost", "important": "true"]),
        node(
            "forwarded", xmlns: Namespace.forward,
            node(
                "message", xmlns: Namespace.client,
                [
                    "id": "m1", "xml:lang": "en", "to": "alice@localhost",
                    "from": "bob@localhost/laptop", "type": "chat",
                ],
                node("body", text: "Are you there?"),
                node("request", xmlns: Namespace.receipts),
                node("markable", xmlns: Namespace.chatMarkers),
                node("origin-id", xmlns: Namespace.sid, ["id": "m1"]),
                node("stanza-id", xmlns: Namespace.sid, ["id": "cYxKc5Y3-RR7bAh-iqjNqYcw", "by": "alice@localhost"]),
                node("delay", xmlns: Namespace.delay, ["stamp": "2026-11-29T16:06:01Z", "from": "alice@localhost"]))))

    /// prosody-0.12-bridge.xml.txt, bridge-hibernate.log: a Jingle Message Initiation propose.
    static let prosodyBridgeCall = publish(
        id: "35cfa3694c28d85323b170a77580518ba10acea8509a7a4d621ce6d6535593c0",
        notification: summary(),
        node("account", xmlns: "urn:xmpp:apush:bridge:0", ["jid": "alice@localhost", "important": "true"]),
        node(
            "forwarded", xmlns: Namespace.forward,
            node(
                "message", xmlns: Namespace.client,
                [
                    "id": "call1", "to": "alice@localhost", "xml:lang": "en",
                    "from": "bob@localhost/laptop", "type": "chat",
                ],
                node(
                    "propose", xmlns: Namespace.jingleMessage, ["id": "sess1"],
                    node("description", xmlns: Namespace.jingleRTP, ["media": "audio"])),
                node("store", xmlns: Namespace.hints),
                node("stanza-id", xmlns: Namespace.sid, ["id": "qfrP1qoQMvnXmTq2IL_A0_Re", "by": "alice@localhost"]))))

    /// prosody-0.12-bridge.xml.txt: a carbon of the user's own <displayed/>, sent from the desktop.
    static let prosodyBridgeCarbon = publish(
        id: "carbon-displayed",
        notification: summary(sender: "alice@localhost", body: nil),
        node("account", xmlns: "urn:xmpp:apush:bridge:0", ["jid": "alice@localhost", "important": "false"]),
        node(
            "forwarded", xmlns: Namespace.forward,
            node(
                "message", xmlns: Namespace.client,
                [
                    "from": "alice@localhost", "to": "alice@localhost/phone",
                    "type": "chat",
                ],
                node(
                    "sent", xmlns: Namespace.carbons,
                    node(
                        "forwarded", xmlns: Namespace.forward,
                        node(
                            "message", xmlns: Namespace.client,
                            [
                                "to": "bob@localhost", "xml:lang": "en", "from": "alice@localhost/desktop",
                                "id": "d1", "type": "chat",
                            ],
                            node("displayed", xmlns: Namespace.chatMarkers, ["id": "m1"]),
                            node(
                                "stanza-id", xmlns: Namespace.sid,
                                ["id": "96bylipcICIy5HIuZFf9bo1U", "by": "alice@localhost"])))),
                node("delay", xmlns: Namespace.delay, ["from": "alice@localhost", "stamp": "2026-11-29T16:03:40Z"]))))

    /// prosody-0.12-bridge.xml.txt, bridge-ackdelay.log: the bridge reports a push registration.
    static let prosodyBridgeRegistered = stanza(
        node(
            "message", ["to": "apush.localhost", "type": "normal", "from": "localhost"],
            node(
                "registered", xmlns: "urn:xmpp:apush:bridge:0", ["account": "alice@localhost", "resource": "phone"],
                node(
                    "enable", xmlns: Namespace.push, ["jid": "apush.localhost", "node": "tok123"],
                    publishOptions()))))

    /// ejabberd-23.01-stock.md: a publish for a chat message with body (a submit summary with labels).
    static let ejabberdPublish = stanza(
        node(
            "iq",
            [
                "to": "apush.localhost", "from": "localhost", "type": "set",
                "id": "rr-1795967808776-14185123850952092071-JLlOJ2JIdx03ximIX55o6bYedL4=-95942708",
            ],
            node(
                "pubsub", xmlns: Namespace.pubsub,
                node(
                    "publish", ["node": "tok123"],
                    node(
                        "item",
                        node(
                            "notification", xmlns: Namespace.push,
                            node(
                                "x", xmlns: Namespace.dataForms, ["type": "submit"],
                                field("FORM_TYPE", type: "hidden", "urn:xmpp:push:summary"),
                                field(
                                    "last-message-sender", type: "jid-single",
                                    label: "The sender of the last received message", "bob@localhost/laptop"),
                                field(
                                    "last-message-body", type: "text-single",
                                    label: "The body text of the last received message", "New message"))))),
                node(
                    "publish-options",
                    publishOptions(
                        pushModule: "apns", key: "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=", flag: "true")))))

    /// ejabberd-23.01-stock.md: a publish for anything else: an empty notification.
    static let ejabberdEmptyPublish = stanza(
        node(
            "iq",
            [
                "to": "apush.localhost", "from": "localhost", "type": "set",
                "id": "rr-1795967806758-16644596157941548258-NktHauuOQwsqF1RS83mPN3QFlbo=-95942708",
            ],
            node(
                "pubsub", xmlns: Namespace.pubsub,
                node("publish", ["node": "tok123"], node("item", node("notification", xmlns: Namespace.push))),
                node(
                    "publish-options",
                    publishOptions(
                        pushModule: "apns", key: "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=", flag: "true")))))

    /// ejabberd-23.01-stock.md: the component's error reply.
    static let ejabberdErrorReply = stanza(
        node(
            "iq",
            [
                "type": "error", "from": "apush.localhost", "to": "localhost",
                "id": "rr-1795967828813-8177834385908359258-iuIi27e2RqE/2eRCFcW0SK8zv1Y=-95942708",
            ],
            node("error", ["type": "wait"], node("resource-constraint", xmlns: Namespace.stanzaErrors))))

    /// ejabberd-23.01-stock.md: mod_delegation asks for the delegated namespace's features.
    static let ejabberdDiscoQuery = stanza(
        node(
            "iq",
            [
                "to": "apush.localhost", "from": "localhost", "type": "get",
                "id": "rr-1795967871984-16053748326798559298-PrJ0LdfrYB687NlSWm8cY33QWqc=-95942708",
            ],
            node("query", xmlns: Namespace.discoInfo, ["node": "urn:xmpp:delegation:1::urn:xmpp:push:0"])))

    /// ejabberd-23.01-stock.md: the component's answer to `ejabberdDiscoQuery`.
    static let ejabberdDiscoReply = stanza(
        node(
            "iq",
            [
                "type": "result", "from": "apush.localhost", "to": "localhost",
                "id": "rr-1795967871984-16053748326798559298-PrJ0LdfrYB687NlSWm8cY33QWqc=-95942708",
            ],
            node(
                "query", xmlns: Namespace.discoInfo, ["node": "urn:xmpp:delegation:1::urn:xmpp:push:0"],
                node("identity", ["category": "pubsub", "type": "push", "name": "apush"]),
                node("feature", ["var": "urn:xmpp:push:0"]))))

    /// ejabberd-23.01-stock.md: a delegated <enable/> forwarded by mod_delegation.
    static let ejabberdDelegatedEnable = stanza(
        node(
            "iq",
            [
                "to": "apush.localhost", "from": "localhost", "type": "set",
                "id": "rr-1795967873442-1291043620259394866-zclv4gJQdAZXTnCw5F1w6iUFSio=-95942708",
            ],
            node(
                "delegation", xmlns: "urn:xmpp:delegation:1",
                node(
                    "forwarded", xmlns: Namespace.forward,
                    node(
                        "iq", xmlns: Namespace.client,
                        [
                            "xml:lang": "en", "to": "alice@localhost",
                            "from": "alice@localhost/phone", "type": "set", "id": "push1",
                        ],
                        node(
                            "enable", xmlns: Namespace.push, ["jid": "apush.localhost", "node": "tok123"],
                            publishOptions(
                                pushModule: "apns",
                                key: "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=", flag: "true")))))))

    static let all: [String: Element] = [
        "prosodyStockPublish": prosodyStockPublish, "prosodyBridgePublish": prosodyBridgePublish,
        "prosodyBridgeCall": prosodyBridgeCall, "prosodyBridgeCarbon": prosodyBridgeCarbon,
        "prosodyBridgeRegistered": prosodyBridgeRegistered, "ejabberdPublish": ejabberdPublish,
        "ejabberdEmptyPublish": ejabberdEmptyPublish, "ejabberdErrorReply": ejabberdErrorReply,
        "ejabberdDiscoQuery": ejabberdDiscoQuery, "ejabberdDiscoReply": ejabberdDiscoReply,
        "ejabberdDelegatedEnable": ejabberdDelegatedEnable,
    ]
}
