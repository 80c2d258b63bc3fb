public import XMLStream

/// An error carried by a stanza of type `error` (RFC 6120 §8.3).
///
/// Handlers throw these to answer a request; anything else a handler throws becomes
/// `internal-server-error`. Read one from an incoming error stanza with `init?(stanza:)`.
public struct StanzaError: Error, Sendable, Equatable {
    /// RFC 6120 §8.3.2: what the requester should do about it.
    public enum ErrorType: String, Sendable, Hashable, CaseIterable {
        /// Retry after providing credentials.
        case auth
        /// Do not retry: the error cannot be remedied.
        case cancel
        /// Proceed: the condition was only a warning.
        case `continue`
        /// Retry after changing the data sent.
        case modify
        /// Retry after waiting: the error is temporary.
        case wait
    }

    /// A defined condition of RFC 6120 §8.3.3. Conditions from the wire that this type does not know
    /// keep their name, so nothing is lost when relaying.
    public struct Condition: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let badRequest = Condition(rawValue: "bad-request")
        public static let conflict = Condition(rawValue: "conflict")
        public static let featureNotImplemented = Condition(rawValue: "feature-not-implemented")
        public static let forbidden = Condition(rawValue: "forbidden")
        /// May carry the entity's new address (`alternateAddress`).
        public static let gone = Condition(rawValue: "gone")
        public static let internalServerError = Condition(rawValue: "internal-server-error")
        public static let itemNotFound = Condition(rawValue: "item-not-found")
        public static let jidMalformed = Condition(rawValue: "jid-malformed")
        public static let notAcceptable = Condition(rawValue: "not-acceptable")
        public static let notAllowed = Condition(rawValue: "not-allowed")
        public static let notAuthorized = Condition(rawValue: "not-authorized")
        public static let policyViolation = Condition(rawValue: "policy-violation")
        public static let recipientUnavailable = Condition(rawValue: "recipient-unavailable")
        /// Should carry the alternate address (`alternateAddress`).
        public static let redirect = Condition(rawValue: "redirect")
        public static let registrationRequired = Condition(rawValue: "registration-required")
        public static let remoteServerNotFound = Condition(rawValue: "remote-server-not-found")
        public static let remoteServerTimeout = Condition(rawValue: "remote-server-timeout")
        public static let resourceConstraint = Condition(rawValue: "resource-constraint")
        public static let serviceUnavailable = Condition(rawValue: "service-unavailable")
        public static let subscriptionRequired = Condition(rawValue: "subscription-required")
        public static let undefinedCondition = Condition(rawValue: "undefined-condition")
        public static let unexpectedRequest = Condition(rawValue: "unexpected-request")

        /// Every condition RFC 6120 defines, with the error type its examples use.
        public static let defined: [Condition: ErrorType] = [
            .badRequest: .modify, .conflict: .cancel, .featureNotImplemented: .cancel, .forbidden: .auth,
            .gone: .cancel, .internalServerError: .cancel, .itemNotFound: .cancel, .jidMalformed: .modify,
            .notAcceptable: .modify, .notAllowed: .cancel, .notAuthorized: .auth, .policyViolation: .modify,
            .recipientUnavailable: .wait, .redirect: .modify, .registrationRequired: .auth,
            .remoteServerNotFound: .cancel, .remoteServerTimeout: .wait, .resourceConstraint: .wait,
            .serviceUnavailable: .cancel, .subscriptionRequired: .auth, .undefinedCondition: .modify,
            .unexpectedRequest: .wait,
        ]

        /// The type to send with this condition when the caller names none (`cancel` if unknown).
        public var defaultType: ErrorType { Self.defined[self] ?? .cancel }

        public var description: String { rawValue }
    }

    public var type: ErrorType
    public var condition: Condition
    /// Human-readable text for the requester's logs; never user content, tokens or keys.
    public var text: String?
    /// The address inside `<gone/>` or `<redirect/>`.
    public var alternateAddress: String?
    /// An application-specific condition element (e.g. one in the pubsub#errors namespace).
    public var applicationCondition: Element?
    /// The `by` attribute: the entity that produced the error.
    public var by: String?
    /// What the error stanza sends back before its `<error/>` (RFC 6120 §8.3.1 lets it include the
    /// original XML): the part of the request its sender needs to tell which of its requests was
    /// refused. Never read from the wire, and never part of `element`.
    public var payload: Element?

    public init(
        _ condition: Condition, type: ErrorType? = nil, text: String? = nil,
        alternateAddress: String? = nil, applicationCondition: Element? = nil, by: String? = nil,
        payload: Element? = nil
    ) {
        self.condition = condition
        self.type = type ?? condition.defaultType
        self.text = text
        self.alternateAddress = alternateAddress
        self.applicationCondition = applicationCondition
        self.by = by
        self.payload = payload
    }

    /// The `<error/>` child of an error stanza. It has no namespace of its own: it takes the
    /// stanza's (`Element.errorReply` sets it to the stanza's namespace).
    public var element: Element {
        var error = Element("error", ["type": type.rawValue, "by": by])
        error.append(Element(condition.rawValue, namespace: Namespace.stanzaErrors, [:], text: alternateAddress))
        if let text { error.append(Element("text", namespace: Namespace.stanzaErrors, [:], text: text)) }
        if let applicationCondition { error.append(applicationCondition) }
        return error
    }

    /// Reads an `<error/>` element. A missing or unknown type falls back to the condition's default
    /// type, and a missing condition reads as `undefined-condition`, so a sloppy peer's error is kept.
    public init?(errorElement: Element) {
        guard errorElement.name == "error" else { return nil }
        let parts = ErrorElementParts(errorElement, conditionNamespace: Namespace.stanzaErrors)
        self.init(
            parts.condition.map(Condition.init(rawValue:)) ?? .undefinedCondition,
            type: errorElement[attribute: "type"].flatMap(ErrorType.init(rawValue:)), text: parts.text,
            alternateAddress: parts.conditionText, applicationCondition: parts.applicationCondition,
            by: errorElement[attribute: "by"])
    }

    /// Reads the error of a stanza of type `error`; nil for any other stanza.
    public init?(stanza: Element) {
        guard stanza[attribute: "type"] == "error",
            let error = stanza.elements.first(where: {
                $0.name == "error" && ($0.namespace == stanza.namespace || $0.namespace == nil)
            })
        else { return nil }
        self.init(errorElement: error)
    }
}
