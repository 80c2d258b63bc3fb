public import XMLStream

/// An identity of a XEP-0030 disco#info answer, e.g. `pubsub`/`push` or `component`/`generic`.
public struct DiscoIdentity: Sendable, Hashable {
    public var category: String
    public var type: String
    public var name: String?
    /// The `xml:lang` of `name`, when an entity names itself in several languages.
    public var language: String?

    public init(category: String, type: String, name: String? = nil, language: String? = nil) {
        self.category = category
        self.type = type
        self.name = name
        self.language = language
    }
}

/// A XEP-0030 disco#info answer, with XEP-0128 extension forms.
public struct DiscoInfo: Sendable, Equatable {
    public var node: String?
    public var identities: [DiscoIdentity]
    public var features: [String]
    /// XEP-0128 service discovery extensions: `result` forms each with a FORM_TYPE.
    public var extensions: [DataForm]

    public init(
        node: String? = nil, identities: [DiscoIdentity], features: [String],
        extensions: [DataForm] = []
    ) {
        self.node = node
        self.identities = identities
        self.features = features
        self.extensions = extensions
    }

    public func hasFeature(_ feature: String) -> Bool { features.contains(feature) }

    /// `<query xmlns='http://jabber.org/protocol/disco#info'/>`.
    public var element: Element {
        let namespace = Namespace.discoInfo
        var query = Element("query", namespace: namespace, ["node": node])
        for identity in identities {
            query.append(
                Element(
                    "identity", namespace: namespace,
                    [
                        "category": identity.category, "type": identity.type, "name": identity.name,
                        "xml:lang": identity.language,
                    ]))
        }
        for feature in features { query.append(Element("feature", namespace: namespace, ["var": feature])) }
        for form in extensions { query.append(form.element) }
        return query
    }

    public init(element: Element) throws(DiscoError) {
        let namespace = Namespace.discoInfo
        guard element.name == "query", element.namespace == namespace else { throw .notADiscoQuery }
        node = element[attribute: "node"]
        identities = []
        features = []
        extensions = []
        for child in element.elements {
            switch (child.namespace, child.name) {
            case (namespace, "identity"):
                guard let category = child[attribute: "category"], let type = child[attribute: "type"] else {
                    throw .identityWithoutCategoryOrType
                }
                identities.append(
                    DiscoIdentity(
                        category: category, type: type, name: child[attribute: "name"],
                        language: child[attribute: "xml:lang"]))
            case (namespace, "feature"):
                guard let feature = child[attribute: "var"] else { throw .featureWithoutVariable }
                features.append(feature)
            case (Namespace.dataForms, "x"):
                do { extensions.append(try DataForm(element: child)) } catch { throw .invalidExtension(error) }
            default: continue
            }
        }
    }
}

/// An item of a XEP-0030 disco#items answer.
public struct DiscoItem: Sendable, Hashable {
    public var jid: JID
    public var node: String?
    public var name: String?

    public init(jid: JID, node: String? = nil, name: String? = nil) {
        self.jid = jid
        self.node = node
        self.name = name
    }
}

/// A XEP-0030 disco#items answer.
public struct DiscoItems: Sendable, Equatable {
    public var node: String?
    public var items: [DiscoItem]

    public init(node: String? = nil, items: [DiscoItem]) {
        self.node = node
        self.items = items
    }

    /// `<query xmlns='http://jabber.org/protocol/disco#items'/>`.
    public var element: Element {
        let namespace = Namespace.discoItems
        return Element(
            "query", namespace: namespace, ["node": node],
            children: items.map { item in
                Element(
                    "item", namespace: namespace, ["jid": item.jid.description, "node": item.node, "name": item.name])
            })
    }

    public init(element: Element) throws(DiscoError) {
        let namespace = Namespace.discoItems
        guard element.name == "query", element.namespace == namespace else { throw .notADiscoQuery }
        node = element[attribute: "node"]
        items = []
        for child in element.elements where child.name == "item" && child.namespace == namespace {
            guard let address = child[attribute: "jid"] else { throw .itemWithoutJID }
            let jid: JID
            do { jid = try JID(address) } catch { throw .invalidItemJID(error) }
            items.append(DiscoItem(jid: jid, node: child[attribute: "node"], name: child[attribute: "name"]))
        }
    }
}

/// Why an element is not a well-formed disco answer.
public enum DiscoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not a `<query/>` in the expected disco namespace.
    case notADiscoQuery
    case identityWithoutCategoryOrType
    case featureWithoutVariable
    case invalidExtension(DataFormError)
    case itemWithoutJID
    case invalidItemJID(JIDError)

    public var description: String {
        switch self {
        case .notADiscoQuery: "not a disco <query/> in the expected namespace"
        case .identityWithoutCategoryOrType: "an <identity/> lacks its category or type"
        case .featureWithoutVariable: "a <feature/> has no var"
        case .invalidExtension(let error): "an extension form is malformed: \(error)"
        case .itemWithoutJID: "an <item/> has no jid"
        case .invalidItemJID(let error): "an <item/> has an invalid jid: \(error)"
        }
    }
}
