public import HTTPServer
public import Logging
public import XMPP
import XMLStream

/// The running component: the link to the server, the router, each module's background work, and the
/// operations endpoint with the modules' pages when `http` is set.
public struct ComponentService: Sendable {
    public static let softwareName = "apush-component"
    public static let softwareVersion = "0.1.0"

    public let configuration: Configuration
    public let connection: ComponentConnection
    public let context: ModuleContext
    /// The link's state and the uptime, for the modules' pages.
    public let status = HostStatus()
    /// The operations endpoint, listening from here on (a taken port fails the start).
    public let http: HTTPServer?
    private let modules: [any HostedModule]
    private let logger: Logger

    /// `modules` are built by the caller from the configuration (and its `moduleValues`); `httpSettings`
    /// bound the operations endpoint's connections (tests shorten its timeout).
    public init(
        configuration: Configuration, modules: [any HostedModule], logger: Logger,
        httpSettings: HTTPServer.Settings = HTTPServer.Settings()
    ) throws {
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
            maxStanzasInHandling: Self.maxStanzasInHandling(for: modules),
            orderingKey: { stanza in modules.lazy.compactMap { $0.orderingKey(of: stanza) }.first })
        connection = ComponentConnection(settings: settings, logger: logger.child(label: "link"))
        context = ModuleContext(
            componentJID: try JID(configuration.component.jid),
            servedDomains: Set(configuration.domains.compactMap { try? JID($0).domainpart }),
            admins: Set(configuration.admins.compactMap { try? JID($0).bare }),
            sender: connection, logger: logger, linkIsUp: { [status] in status.linkIsUp })
        if let address = configuration.http {
            let routes = modules.flatMap { [context, status] in $0.httpRoutes(context: context, host: status) }
            let endpoint = try HTTPServer(
                host: address.host, port: address.port, routes: routes, settings: httpSettings,
                logger: logger.child(label: "http"))
            status.serve(endpoint)
            http = endpoint
            logger.info("operations endpoint listening on \(address)")
        } else {
            http = nil
        }
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
            software: (Self.softwareName, Self.softwareVersion),
            sessionKey: AdHocSessionKey(componentSecret: configuration.component.secret))
        let connection = connection
        let logger = logger
        let status = status
        let relay = Self.relayAnswers(
            of: modules, to: connection, pinged: try? JID(configuration.domains[0]), logger: logger)
        defer { relay?.watch.stop() }
        await withDiscardingTaskGroup { group in
            if let http {
                group.addTask { await http.run() }
            }
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
                    },
                    onEvent: { event in
                        status.record(event)
                        for module in modules { module.linkChanged(up: status.linkIsUp) }
                        await onEvent(event)
                    }, onStrayAnswer: relay?.passOn)
                status.linkStopped()
                logger.info("component link closed")
            }
        }
    }

    /// The modules' relay of answers, heard into `connection`: answers to another instance's requests
    /// go to it, when there is another. Nil when no module relays or none can be heard.
    private static func relayAnswers(
        of modules: [any HostedModule], to connection: ComponentConnection, pinged: JID?, logger: Logger
    ) -> RelayedAnswers? {
        for relay in modules.compactMap(\.answerRelay) {
            do {
                if let watch = try relay.watch({ connection.acceptRelayedAnswer($0) }) {
                    return RelayedAnswers(
                        watch: watch,
                        passOn: { answer in
                            if isAnswer(answer, ofWhomAsked: relay, pinged: pinged) { relay.pass(answer) }
                        })
                }
            } catch {
                logger.error("cannot hear the answers other instances pass on: \(error)")
            }
        }
        return nil
    }
}

/// The answers relayed between instances while the link runs.
/// Whether `answer` comes from an entity this host's instances send requests to: the server the link
/// pings, or one the relay's module asks.
func isAnswer(_ answer: Element, ofWhomAsked relay: any AnswerRelay, pinged: JID?) -> Bool {
    guard let from = answer[attribute: "from"].flatMap({ try? JID($0) }) else { return false }
    return from == pinged || relay.asks(from)
}

private struct RelayedAnswers: Sendable {
    let watch: any RelayWatch
    let passOn: @Sendable (Element) -> Void
}
