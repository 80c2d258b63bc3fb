public import XMLStream

/// RFC 6120 §8.2.3: the four kinds of IQ.
public enum IQType: String, Sendable, Hashable, CaseIterable {
    case get, set, result, error

    /// `get` and `set` are requests, which must be answered with exactly one `result` or `error`.
    public var isRequest: Bool { self == .get || self == .set }
}

/// RFC 6121 §5.2.2 message types.
public enum MessageType: String, Sendable, Hashable, CaseIterable {
    case chat, error, groupchat, headline, normal
}

// Stanzas are plain `Element`s; these helpers build and read the parts every handler needs.
extension Element {
    /// Builds an `<iq/>`. `namespace` is the stream's content namespace; this library speaks XEP-0114.
    public static func iq(
        type: IQType, id: String, from: JID? = nil, to: JID? = nil, payload: Element? = nil,
        namespace: String = Namespace.componentAccept
    ) -> Element {
        var iq = Element(
            "iq", namespace: namespace,
            ["type": type.rawValue, "id": id, "from": from?.description, "to": to?.description])
        if let payload { iq.append(payload) }
        return iq
    }

    /// Builds a `<message/>` (type left out when nil, which means `normal`).
    public static func message(
        type: MessageType? = nil, id: String? = nil, from: JID? = nil, to: JID? = nil,
        children: [Element] = [], namespace: String = Namespace.componentAccept
    ) -> Element {
        Element(
            "message", namespace: namespace,
            ["type": type?.rawValue, "id": id, "from": from?.description, "to": to?.description],
            children: children)
    }

    /// The `id` attribute.
    public var stanzaID: String? { self[attribute: "id"] }
    /// The `from` attribute as written.
    public var fromString: String? { self[attribute: "from"] }
    /// The `to` attribute as written.
    public var toString: String? { self[attribute: "to"] }
    /// The `from` address; nil when absent or not a valid JID.
    public var from: JID? { fromString.flatMap { try? JID($0) } }
    /// The `to` address; nil when absent or not a valid JID.
    public var to: JID? { toString.flatMap { try? JID($0) } }
    /// The `type` attribute as written.
    public var stanzaType: String? { self[attribute: "type"] }

    /// The IQ type, for an `<iq/>` with a known type; nil otherwise.
    public var iqType: IQType? {
        guard name == "iq" else { return nil }
        return stanzaType.flatMap(IQType.init(rawValue:))
    }

    /// True for an `<iq/>` of type `get` or `set`.
    public var isIQRequest: Bool { iqType?.isRequest ?? false }

    /// True for any stanza of type `error`.
    public var isErrorStanza: Bool { stanzaType == "error" }

    /// The `result` answering this IQ request: same id, `from` and `to` swapped, same namespace.
    /// Nil unless this is an IQ `get` or `set`: responses are never answered (RFC 6120 §8.2.3).
    public func resultReply(payload: Element? = nil) -> Element? {
        guard isIQRequest else { return nil }
        var reply = reply(type: IQType.result.rawValue)
        if let payload { reply.append(payload) }
        return reply
    }

    /// The error stanza answering this one: same kind and id, `from` and `to` swapped, type `error`.
    /// The request's payload is not echoed back (it may hold what should not travel twice); what the
    /// handler chose to send back (`StanzaError.payload`) goes before the `<error/>`.
    /// Nil for an error stanza and for an IQ response: RFC 6120 §8.3.1 forbids answering an error
    /// with an error, and §8.2.3 says responses are not answered.
    public func errorReply(_ error: StanzaError) -> Element? {
        guard !isErrorStanza, name != "iq" || isIQRequest else { return nil }
        var reply = reply(type: "error")
        if let payload = error.payload { reply.append(payload) }
        var errorElement = error.element
        errorElement.namespace = namespace
        reply.append(errorElement)
        return reply
    }

    private func reply(type: String) -> Element {
        Element(name, namespace: namespace, ["type": type, "id": stanzaID, "from": toString, "to": fromString])
    }
}
