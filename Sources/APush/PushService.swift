import Foundation
import Logging
import Sealing
import Store
import Synchronization
import XMPP

/// The push path, one concern a file:
/// - intake (`PushService+Intake`): the server's publish, answered;
/// - events (`PushService+Events`): what one event means for one registration;
/// - policy (`PushService+Policy`): the account's policy, resolved and cached;
/// - delivery (`Delivery`, a type of its own): seal, publish upstream, record the answer, retry;
/// - background (`PushService+Background`, on `DueWork`'s bell and slots): windows and retries that
///   come due, and maintenance;
/// - the bridge's reports (`PushService+Bridge`) and the `#test` push (`PushService+TestPush`).
///
/// Decisions are made by the pure parts (EventClassifier, PolicyDecision, ChatCoalescer, UpstreamOutcome);
/// this type only wires them to the store, the clock and the link.
final class PushService: Sendable {
    let store: any PushStore
    let settings: APushSettings
    let statistics = PushStatistics()
    let clock: PushClock
    let logger: Logger
    /// The background loop's bell and slots.
    let dueWork: DueWork
    /// Seals, sends and records each push.
    let delivery: Delivery
    let policies = Mutex(PolicyCache())
    /// What the bridges told of each account's other sessions, for grace (in memory only: fails open).
    let accountSessions = Mutex(AccountSessions())
    /// Each account's user commands, at most a burst and then one per interval (`APushCommands`).
    let commandRates = Mutex(
        CommandRateLimiter(
            burst: APushCommands.userCommandBurst, interval: APushCommands.userCommandInterval, capacity: 4096))
    /// The total /health shows, read from the store at most once per interval.
    let storeReading = StoreReading()
    /// Lines about a condition that lasts (a store fault, notifications that do not verify, the `cancel`
    /// budget spent) would come with every stanza while it lasts: each is written once a minute per key.
    let minuteLog = Mutex(LogLimiter(interval: 60_000, capacity: 40))

    init(store: any PushStore, settings: APushSettings, logger: Logger, clock: PushClock = .system) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.clock = clock
        dueWork = DueWork(clock: clock, capacity: settings.maxBackgroundDeliveries)
        delivery = Delivery(
            store: store, settings: settings, statistics: statistics, clock: clock, logger: logger, dueWork: dueWork)
    }

    func now() -> Timestamp { clock.now() }

    /// `store.transaction`, counting what it counts only once it commits.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws -> T {
        try await store.transaction(counting: statistics, body)
    }

    /// `store.transactionDecided`, counting what it counts only once it commits.
    func transactionDecided<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws
        -> DecidedTransaction<T>
    {
        try await store.transactionDecided(counting: statistics, body)
    }

    static let day: Timestamp = 86_400_000

    /// The answer to a stanza that met a store fault that may pass (a full or read-only disk, a store
    /// not opened yet), logged once per kind and minute; nil for any other error. `wait`, so servers
    /// keep their registrations and try again; `resource-constraint`, since what is lacking is a
    /// system resource, the disk (RFC 6120 §8.3.3.18), not a defect (`internal-server-error`).
    func storeFault(_ error: any Error, during what: String) -> StanzaError? {
        guard let kind = (error as? any TransientStoreFault)?.transientKind else { return nil }
        if minuteLog.withLock({ $0.allows("store fault: \(kind)", at: now()) }) {
            logger.error("\(what) met a store fault, answering wait (logged once a minute while it lasts): \(error)")
        }
        return StanzaError(
            .resourceConstraint, type: .wait, text: "the push store is unavailable for now; try again later")
    }

    /// A notification on the shared store's `channel` did not verify (another of the database's roles
    /// sent it, or it was damaged): it was dropped unread; counted, and logged once a minute.
    func notificationRejected(on channel: String) {
        statistics.count(.notificationRejected)
        if minuteLog.withLock({ $0.allows("rejected notification: \(channel)", at: now()) }) {
            logger.warning(
                "a notification on the store's \(channel) channel did not verify, dropped: another role of the database may be forging them (logged once a minute)"
            )
        }
    }

    /// Runs a command or a bridge report, answering a store fault as `storeFault` does.
    func answeringStoreFaults<T>(during what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw storeFault(error, during: what) ?? error
        }
    }
}
