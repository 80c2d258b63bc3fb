public import ComponentHost
import Foundation
public import HTTPServer
public import Logging
import Sealing
import Synchronization
public import Store
public import XMLStream
public import XMPP

/// mod_apush as a hosted module: takes the server's publishes and the bridge's reports, and keeps
/// the stored work (windows, retries) moving.
public struct APushModule: HostedModule {
    let service: PushService
    let relay: StoreAnswerRelay
    /// The store's clock, which every instance sharing it keeps its times on.
    let sharedClock: SharedClock
    let appServer: JID
    let upstreamTimeout: Duration

    public init(store: any PushStore, settings: APushSettings, logger: Logger, clock: PushClock = .system) throws {
        guard let appServer = try? JID(settings.appServer) else {
            throw ConfigurationError(key: "appServer", reason: "the App Server's JID is required")
        }
        self.appServer = appServer
        upstreamTimeout = .seconds(settings.upstreamTimeoutSeconds)
        sharedClock = SharedClock(base: clock, reading: { try await store.clockReading() })
        service = PushService(
            store: store, settings: settings, logger: logger.child(label: "apush"), clock: sharedClock.clock)
        relay = StoreAnswerRelay(
            store: store, appServer: appServer, logger: logger.child(label: "relay"), clock: sharedClock.clock,
            keptFor: upstreamTimeout, rejected: { [service] in service.notificationRejected(on: "peers") })
    }

    /// Answers to another instance's requests go to it through the store they share.
    public var answerRelay: (any AnswerRelay)? { relay }

    /// The keys of the configuration that are the push module's: the `push` section, the App Server's
    /// JID (`appServer`, or `APUSH_APP_SERVER`) and its store (`StoreSettings`).
    public static let configuration = ModuleConfiguration(
        keys: ["appServer", "push"] + StoreSettings.keys,
        environment: [EnvironmentOverride("APP_SERVER", key: "appServer")] + StoreSettings.environment)

    /// Reads the `push` section and `appServer` from the host's configuration.
    public static func settings(from configuration: Configuration) throws(ConfigurationError) -> APushSettings {
        var settings = APushSettings()
        if let section = configuration.moduleValues["push"] {
            guard let object = (try? JSONSerialization.jsonObject(with: section)) as? [String: Any] else {
                throw ConfigurationError(key: "push", reason: "must be an object")
            }
            try Configuration.checkKeys(
                object, allowed: Set(APushSettings.CodingKeys.allCases.map(\.rawValue)),
                path: "push")
            if let defaults = object["defaults"] as? [String: Any] {
                try Configuration.checkKeys(
                    defaults, allowed: Set(PushPolicy.CodingKeys.allCases.map(\.rawValue)),
                    path: "push.defaults")
            }
            settings = try Configuration.decode(APushSettings.self, from: section, section: "push")
        }
        guard let appServer = try configuration.moduleString("appServer") else {
            throw ConfigurationError(key: "appServer", reason: "missing: the App Server's JID is required")
        }
        guard (try? JID(appServer)) != nil else {
            throw ConfigurationError(key: "appServer", reason: "'\(appServer)' is not a valid JID")
        }
        settings.appServer = appServer
        return settings
    }

    public var discoIdentities: [DiscoIdentity] {
        [DiscoIdentity(category: "pubsub", type: "push", name: "apush")]
    }

    public var discoFeatures: [String] { [Namespace.push, APushNamespace.bridge] }

    public var maxRequestsInFlight: Int { service.settings.maxInFlight }

    public var iqRoutes: [IQRoute] {
        [
            IQRoute(.set, "pubsub", namespace: Namespace.pubsub) { iq, context in
                await sharedClock.ready()
                try await service.handlePublish(iq, servedDomains: context.servedDomains, upstream: upstream(context))
                return nil
            }
        ]
    }

    public var messageRoutes: [MessageRoute] {
        [
            MessageRoute(namespace: APushNamespace.bridge) { message, context in
                await sharedClock.ready()
                try await service.handleBridge(
                    message, servedDomains: context.servedDomains, componentJID: context.componentJID)
            }
        ]
    }

    /// A registration's publishes are decided in the order the server sent them: a read decided before
    /// the message it reads would leave that message's push held, to go out after the read.
    /// Likewise an account's bridge reports: its sessions' presence in the order they changed.
    public func orderingKey(of stanza: Element) -> String? {
        if let key = BridgeReport.orderingKey(of: stanza) { return key }
        guard stanza.name == "iq", stanza[attribute: "type"] == "set",
            let node = stanza.child("pubsub", namespace: Namespace.pubsub)?.child("publish")?[attribute: "node"]
        else { return nil }
        return "\(stanza[attribute: "from"] ?? "") \(node)"
    }

    /// A link that dropped or came back: what the bridge reported of the accounts' other sessions may
    /// no longer hold (the server may have lost them, or their ends went unreported), so it is
    /// forgotten and their pushes go as without grace until the bridge reports again.
    public func linkChanged(up: Bool) {
        service.accountSessions.withLock { $0.forgetAll() }
    }

    public func commands(context: ModuleContext) -> [AdHocCommand] {
        APushCommands(service: service, context: context, upstream: upstream(context)).all
    }

    /// /health and /metrics on the operations endpoint (docs/wire-contract.md, Operations).
    public func httpRoutes(context: ModuleContext, host: HostStatus) -> [HTTPRoute] {
        let servedDomains = context.servedDomains
        return [
            HTTPRoute("/health") { [service] in await service.health(host: host) },
            HTTPRoute("/metrics") { [service] in await service.metrics(host: host, servedDomains: servedDomains) },
        ]
    }

    /// Keeps stored work moving: wakes when a window or retry comes due, when new work is stored, or
    /// for the next housekeeping chore, and otherwise sleeps (an idle component uses no CPU). Without a
    /// link it sends nothing: a push would only fail, and on a shared store the active instance sends it.
    public func run(context: ModuleContext) async throws {
        await sharedClock.ready()
        let upstream = self.upstream(context)
        var maintenance = MaintenanceSchedule(start: service.now())
        // A fault that lasts (a full disk under a due window) fails every turn: one line a minute.
        var failureLog = LogLimiter(interval: 60_000, capacity: 1)
        // Work another instance stored (and may not live to send) wakes this loop too.
        let announcements: (any StoreWatch)?
        do {
            announcements = try service.store.watchDueWork(
                { [service] due in service.dueWork.cameDue(at: due) },
                rejected: { [service] in service.notificationRejected(on: "due") })
        } catch {
            announcements = nil
            context.logger.error("cannot hear the due work of other instances: \(error)")
        }
        defer { announcements?.stop() }
        while !Task.isCancelled {
            do {
                if context.linkIsUp() {
                    try await service.processDueWork(upstream: upstream)
                }
                switch maintenance.due(at: service.now()) {
                case .prune?: try await service.maintain()
                case .flush?: try await service.flushStatistics()
                case nil: break
                }
            } catch {
                if failureLog.allows("background", at: service.now()) {
                    context.logger.error("stored push work failed (logged once a minute while it lasts): \(error)")
                }
                // What failed is still due: retry after a pause rather than at once, in a spin. Not
                // through the wait for due work: a store that cannot answer shows no due time, and the
                // loop would sleep until its next chore, up to a minute after the store is back.
                try? await service.clock.sleep(service.now() + Self.pauseAfterFailure)
                continue
            }
            if context.linkIsUp() {
                await service.waitForDueWork(until: maintenance.next)
            } else {
                // No link (standing by, or the server away): the stored work stays where it is, for the
                // active instance or for this one once its link is up. Look again in a second.
                await service.dueWork.sleep(until: min(maintenance.next, service.now() + Self.linkCheckInterval))
            }
        }
        // Stopping: one more try to record the App Server's answers the store could not record (each
        // left unrecorded is sent again when its lease ends: a push twice), then keep what was counted
        // since the last flush.
        try? await service.delivery.recordUnrecordedAnswers(until: service.now() + Self.recordingAtStopBound)
        try? await service.flushStatistics()
    }

    static let pauseAfterFailure: Timestamp = 1000
    /// How long a stop tries to record the answers kept in memory, at most (a store that is back
    /// records thousands in that time; one that is away fails the first at once).
    static let recordingAtStopBound: Timestamp = 5000
    /// How often a loop without a link looks whether it is up: as often as the link tries to connect.
    static let linkCheckInterval: Timestamp = 1000

    /// The link to the App Server through the host's connection.
    func upstream(_ context: ModuleContext) -> Upstream {
        Upstream(
            sender: context.sender, componentJID: context.componentJID, appServer: appServer,
            timeout: upstreamTimeout)
    }
}

extension ConfigurationSchema {
    /// apush-component's: `APUSH_*` variables over the host's keys and the push module's.
    public static let apushComponent = ConfigurationSchema(
        environmentPrefix: "APUSH_",
        modules: [APushModule.configuration])
}
