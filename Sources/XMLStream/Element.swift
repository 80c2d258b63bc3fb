/// An XML element as a value: a stanza, or any part of one.
///
/// `namespace` is the resolved namespace URI (`nil` only for elements built without one); the
/// serializer writes an `xmlns` wherever it differs from the parent's, so prefixes never leak into
/// the model. Attribute order is kept, which keeps serialisation stable for tests and logs.
public struct Element: Sendable, Hashable {
    public var name: String
    public var namespace: String?
    public var attributes: [Attribute]
    public var children: [Node]

    public init(
        _ name: String, namespace: String? = nil, attributes: [Attribute] = [],
        children: [Node] = []
    ) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes
        self.children = children
    }

    /// Builds an element with attributes given as ordered pairs; `nil` values are left out.
    public init(
        _ name: String, namespace: String? = nil, _ attributes: KeyValuePairs<String, String?>,
        children: [Element] = [], text: String? = nil
    ) {
        self.name = name
        self.namespace = namespace
        self.attributes = attributes.compactMap { key, value in value.map { Attribute(key, $0) } }
        self.children = children.map(Node.element)
        if let text { self.children.append(.text(text)) }
    }

    public subscript(attribute name: String) -> String? {
        get { attributes.first { $0.name == name }?.value }
        set {
            if let index = attributes.firstIndex(where: { $0.name == name }) {
                if let newValue { attributes[index].value = newValue } else { attributes.remove(at: index) }
            } else if let newValue {
                attributes.append(Attribute(name, newValue))
            }
        }
    }

    /// The child elements, in order.
    public var elements: [Element] {
        children.compactMap { if case .element(let element) = $0 { element } else { nil } }
    }

    /// The concatenated character data directly inside this element.
    public var text: String {
        var result = ""
        for case .text(let chunk) in children { result += chunk }
        return result
    }

    /// The first child with this name, in this namespace (or the parent's when `namespace` is nil).
    public func child(_ name: String, namespace: String? = nil) -> Element? {
        let wanted = namespace ?? self.namespace
        return elements.first { $0.name == name && $0.namespace == wanted }
    }

    public mutating func append(_ element: Element) { children.append(.element(element)) }
    public mutating func append(text: String) { children.append(.text(text)) }
}

public struct Attribute: Sendable, Hashable {
    /// The qualified name as written, e.g. `type` or `xml:lang`.
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

public enum Node: Sendable, Hashable {
    case element(Element)
    case text(String)
}
