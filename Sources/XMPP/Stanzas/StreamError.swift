public import XMLStream

/// A stream-level error (RFC 6120 §4.9): sent as `<stream:error/>`, after which the stream closes.
public struct StreamError: Error, Sendable, Equatable {
    /// A defined condition of RFC 6120 §4.9.3; unknown conditions from the wire keep their name.
    public struct Condition: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let badFormat = Condition(rawValue: "bad-format")
        public static let badNamespacePrefix = Condition(rawValue: "bad-namespace-prefix")
        public static let conflict = Condition(rawValue: "conflict")
        public static let connectionTimeout = Condition(rawValue: "connection-timeout")
        public static let hostGone = Condition(rawValue: "host-gone")
        public static let hostUnknown = Condition(rawValue: "host-unknown")
        public static let improperAddressing = Condition(rawValue: "improper-addressing")
        public static let internalServerError = Condition(rawValue: "internal-server-error")
        public static let invalidFrom = Condition(rawValue: "invalid-from")
        public static let invalidNamespace = Condition(rawValue: "invalid-namespace")
        public static let invalidXML = Condition(rawValue: "invalid-xml")
        public static let notAuthorized = Condition(rawValue: "not-authorized")
        public static let notWellFormed = Condition(rawValue: "not-well-formed")
        public static let policyViolation = Condition(rawValue: "policy-violation")
        public static let remoteConnectionFailed = Condition(rawValue: "remote-connection-failed")
        public static let reset = Condition(rawValue: "reset")
        public static let resourceConstraint = Condition(rawValue: "resource-constraint")
        public static let restrictedXML = Condition(rawValue: "restricted-xml")
        /// Carries the host to connect to instead (`otherHost`).
        public static let seeOtherHost = Condition(rawValue: "see-other-host")
        public static let systemShutdown = Condition(rawValue: "system-shutdown")
        public static let undefinedCondition = Condition(rawValue: "undefined-condition")
        public static let unsupportedEncoding = Condition(rawValue: "unsupported-encoding")
        public static let unsupportedFeature = Condition(rawValue: "unsupported-feature")
        public static let unsupportedStanzaType = Condition(rawValue: "unsupported-stanza-type")
        public static let unsupportedVersion = Condition(rawValue: "unsupported-version")

        /// Every condition RFC 6120 §4.9.3 defines.
        public static let defined: Set<Condition> = [
            .badFormat, .badNamespacePrefix, .conflict, .connectionTimeout, .hostGone, .hostUnknown,
            .improperAddressing, .internalServerError, .invalidFrom, .invalidNamespace, .invalidXML,
            .notAuthorized, .notWellFormed, .policyViolation, .remoteConnectionFailed, .reset,
            .resourceConstraint, .restrictedXML, .seeOtherHost, .systemShutdown, .undefinedCondition,
            .unsupportedEncoding, .unsupportedFeature, .unsupportedStanzaType, .unsupportedVersion,
        ]

        public var description: String { rawValue }
    }

    public var condition: Condition
    /// Human-readable text for the peer's logs.
    public var text: String?
    /// The host named inside `<see-other-host/>`.
    public var otherHost: String?
    /// An application-specific condition element.
    public var applicationCondition: Element?

    public init(
        _ condition: Condition, text: String? = nil, otherHost: String? = nil,
        applicationCondition: Element? = nil
    ) {
        self.condition = condition
        self.text = text
        self.otherHost = otherHost
        self.applicationCondition = applicationCondition
    }

    /// `<stream:error/>`: the element `error` in the streams namespace.
    public var element: Element {
        var error = Element("error", namespace: Namespace.streams)
        error.append(Element(condition.rawValue, namespace: Namespace.streamErrors, [:], text: otherHost))
        if let text { error.append(Element("text", namespace: Namespace.streamErrors, [:], text: text)) }
        if let applicationCondition { error.append(applicationCondition) }
        return error
    }

    /// Reads a `<stream:error/>`; nil for any other element. A missing condition reads as
    /// `undefined-condition`.
    public init?(element: Element) {
        guard element.name == "error", element.namespace == Namespace.streams else { return nil }
        let parts = ErrorElementParts(element, conditionNamespace: Namespace.streamErrors)
        self.init(
            parts.condition.map(Condition.init(rawValue:)) ?? .undefinedCondition, text: parts.text,
            otherHost: parts.conditionText, applicationCondition: parts.applicationCondition)
    }
}
