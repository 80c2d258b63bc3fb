public import HTTPServer
public import Logging
public import XMLStream
public import XMPP

/// A module the host carries: what it declares, the stanzas it takes, and its background work.
///
/// The host answers disco, the command list, ping and version from these declarations, so a module
/// is added without touching the XMPP core or the host.
public protocol HostedModule: Sendable {
    var discoIdentities: [DiscoIdentity] { get }
    var discoFeatures: [String] { get }
    var iqRoutes: [IQRoute] { get }
    var messageRoutes: [MessageRoute] { get }
    /// The ad-hoc commands, built with the context their handlers will use.
    func commands(context: ModuleContext) -> [AdHocCommand]
    /// Background work (timers, retries); runs while the host runs and is cancelled at shutdown.
    func run(context: ModuleContext) async throws
    /// At most how many requests the module may have waiting for an answer from the server at once:
    /// the host lets more stanzas than that be handled at once (see ComponentConnection's backpressure).
    var maxRequestsInFlight: Int { get }
    /// The module's pages on the operations endpoint (`http`), which may report what `host` knows.
    func httpRoutes(context: ModuleContext, host: HostStatus) -> [HTTPRoute]
    /// Stanzas with the same key reach their decision in the order they were read (`StanzaTurn`);
    /// nil for a stanza the module does not order. Called on the link's reader, for every stanza: cheap.
    func orderingKey(of stanza: Element) -> String?
    /// The link to the server came up or dropped; called before any stanza of a new link is handled.
    func linkChanged(up: Bool)
    /// How answers reach the instance that asked, when several instances share the component JID;
    /// nil where only one instance runs.
    var answerRelay: (any AnswerRelay)? { get }
}

/// Carries answers between the instances that share one component JID: a server that spreads the
/// JID's stanzas over their connections (ejabberd) may hand one instance the answer to another's
/// request.
public protocol AnswerRelay: Sendable {
    /// Whether the module sends requests to `entity`: only answers from those (and from the server the
    /// link pings) are passed on, since anyone may send the component an IQ result.
    func asks(_ entity: JID) -> Bool
    /// Passes on an answer to a request this instance never sent.
    func pass(_ answer: Element)
    /// Hands `deliver` each answer another instance passes on, until the watch is stopped; nil when
    /// no other instance can pass any (then none is passed on either).
    func watch(_ deliver: @escaping @Sendable (Element) -> Void) throws -> (any RelayWatch)?
}

public protocol RelayWatch: Sendable {
    func stop()
}

extension HostedModule {
    public var discoIdentities: [DiscoIdentity] { [] }
    public var discoFeatures: [String] { [] }
    public var iqRoutes: [IQRoute] { [] }
    public var messageRoutes: [MessageRoute] { [] }
    public func commands(context: ModuleContext) -> [AdHocCommand] { [] }
    public func run(context: ModuleContext) async throws {}
    public var maxRequestsInFlight: Int { 0 }
    public func httpRoutes(context: ModuleContext, host: HostStatus) -> [HTTPRoute] { [] }
    public func orderingKey(of stanza: Element) -> String? { nil }
    public var answerRelay: (any AnswerRelay)? { nil }
    public func linkChanged(up: Bool) {}
}

/// An IQ get or set whose payload has this name and namespace.
public struct IQRoute: Sendable {
    public enum Kind: String, Sendable { case get, set }

    public let kind: Kind
    public let name: String
    public let namespace: String
    /// Returns the result's payload (nil for an empty result) or throws a StanzaError.
    public let handler: @Sendable (Element, ModuleContext) async throws -> Element?

    public init(
        _ kind: Kind, _ name: String, namespace: String,
        handler: @escaping @Sendable (Element, ModuleContext) async throws -> Element?
    ) {
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.handler = handler
    }
}

/// A message carrying a child in this namespace.
public struct MessageRoute: Sendable {
    public let namespace: String
    /// A thrown StanzaError is sent back as a message error.
    public let handler: @Sendable (Element, ModuleContext) async throws -> Void

    public init(namespace: String, handler: @escaping @Sendable (Element, ModuleContext) async throws -> Void) {
        self.namespace = namespace
        self.handler = handler
    }
}

/// What a module may use of the host.
public struct ModuleContext: Sendable {
    public let componentJID: JID
    public let servedDomains: Set<String>
    public let admins: Set<JID>
    public let sender: any StanzaSender
    public let logger: Logger
    /// Whether the link to the server is up: a standby (another instance holds the link) leaves the
    /// shared stored work to the active instance.
    public let linkIsUp: @Sendable () -> Bool

    public init(
        componentJID: JID, servedDomains: Set<String>, admins: Set<JID>, sender: any StanzaSender,
        logger: Logger, linkIsUp: @escaping @Sendable () -> Bool = { true }
    ) {
        self.componentJID = componentJID
        self.servedDomains = servedDomains
        self.admins = admins
        self.sender = sender
        self.logger = logger
        self.linkIsUp = linkIsUp
    }

    /// True for a JID of a user (or the server itself) on a domain the component serves.
    public func isServed(_ jid: JID) -> Bool { servedDomains.contains(jid.domainpart) }

    public func isAdmin(_ jid: JID) -> Bool { isServed(jid) && admins.contains(jid.bare) }
}
