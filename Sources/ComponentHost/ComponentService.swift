public import Logging
public import XMPP

/// The running component: the link to the server, the router, and each module's background work.
public struct ComponentService: Sendable {
    public static let softwareName = "apush-component"
    public static let softwareVersion = "0.1.0"

    public let configuration: Configuration
    public let connection: ComponentConnection
    public let context: ModuleContext
    private let modules: [any HostedModule]
    private let logger: Logger

    /// `modules` are built by the caller from the configuration (and its `moduleValues`).
    public init(configuration: Configuration, modules: [any HostedModule], logger: Logger) throws {
        self.configuration = configuration
        self.modules = modules
        self.logger = logger
        let settings = ComponentConnectionSettings(
            componentJID: configuration.component.jid, secret: configuration.component.secret,
            host: configuration.server.host, port: configuration.server.port,
            keepaliveTarget: configuration.domains[0],
            backoff: Backoff(
                initial: .milliseconds(configuration.reconnect.initialMilliseconds),
                maximum: .milliseconds(configuration.reconnect.maximumMilliseconds)),
            keepaliveInterval: .seconds(configuration.keepalive.intervalSeconds),
            keepaliveTimeout: .seconds(configuration.keepalive.timeoutSeconds),
            maxStanzasInHandling: Self.maxStanzasInHandling(for: modules))
        connection = ComponentConnection(settings: settings, logger: logger.child(label: "link"))
        context = ModuleContext(
            componentJID: try JID(configuration.component.jid),
            servedDomains: Set(configuration.domains.compactMap { try? JID($0).domainpart }),
            admins: Set(configuration.admins.compactMap { try? JID($0).bare }),
            sender: connection, logger: logger)
    }

    /// Twice the requests the modules may have waiting for an answer, and no fewer than the link's
    /// default: the link then never stops reading with every handler waiting for an answer.
    public static func maxStanzasInHandling(for modules: [any HostedModule]) -> Int {
        max(
            ComponentConnectionSettings.defaultMaxStanzasInHandling,
            2 * modules.reduce(0) { $0 + max(0, $1.maxRequestsInFlight) })
    }

    /// Runs until the calling task is cancelled (a signal, or a test that is done).
    public func run(onEvent: @escaping @Sendable (ConnectionEvent) async -> Void = { _ in }) async {
        let router = StanzaRouter(
            modules: modules, context: context,
            software: (Self.softwareName, Self.softwareVersion))
        let connection = connection
        let logger = logger
        await withDiscardingTaskGroup { group in
            for module in modules {
                group.addTask {
                    do {
                        try await module.run(context: router.context)
                    } catch is CancellationError {
                    } catch {
                        logger.critical("a module stopped: \(error)")
                    }
                }
            }
            group.addTask {
                await connection.run(
                    onStanza: { stanza in
                        guard let reply = await router.route(stanza) else { return }
                        do {
                            try connection.send(reply)
                        } catch {
                            logger.debug("could not send a reply: \(error)")
                        }
                    }, onEvent: onEvent)
                logger.info("component link closed")
            }
        }
    }
}
