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
/// - delivery (`PushService+Delivery`): seal, publish upstream, record the answer, retry;
/// - background (`PushService+Background`): windows and retries that come due, and maintenance;
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
    let inFlight = Mutex(0)
    /// Rung when a window opens or a retry is stored, so the background loop wakes for it.
    let dueWork: Doorbell
    /// When the loop sleeping in `waitForDueWork` wakes; nil while it is awake.
    let plannedWake = Mutex<Timestamp?>(nil)
    /// Background deliveries in flight, and a bell rung as each ends (a slot is free again).
    let background = Mutex(0)
    let backgroundDeliveryEnded: Doorbell
    let policies = Mutex(PolicyCache())
    /// Each account's user commands, at most a burst and then one per interval (`APushCommands`).
    let commandRates = Mutex(
        CommandRateLimiter(
            burst: APushCommands.userCommandBurst, interval: APushCommands.userCommandInterval, capacity: 4096))
    /// Ephemeral keys made while there is time to spare, so a seal on the push path does one scalar
    /// multiplication instead of two.
    let ephemeralKeys = EphemeralKeyPool()
    /// The App Server refusing us is logged once per condition and minute, not once per push.
    let refusals = Mutex(LogLimiter(interval: 60_000, capacity: 32))
    /// The total /health shows, read from the store at most once per interval.
    let storeReading = StoreReading()
    /// A store fault fails every stanza alike while it lasts: logged once per kind and minute.
    private let storeFaults = Mutex(LogLimiter(interval: 60_000, capacity: 32))
    /// Notifications that do not verify may come in a flood: logged once per channel and minute.
    private let rejectedNotifications = Mutex(LogLimiter(interval: 60_000, capacity: 2))
    /// Publishes for unknown nodes past the `cancel` budget come as often as users send messages: the
    /// line saying so is written once a minute.
    let unknownNodeLog = Mutex(LogLimiter(interval: 60_000, capacity: 1))

    init(store: any PushStore, settings: APushSettings, logger: Logger, clock: PushClock = .system) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.clock = clock
        dueWork = Doorbell(clock: clock)
        backgroundDeliveryEnded = Doorbell(clock: clock)
    }

    func now() -> Timestamp { clock.now() }

    /// `store.transaction`, counting what it counts only once it commits (`PushStatistics.countingAside`).
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws -> T {
        let (result, counts) = try await store.transaction { transaction in
            try PushStatistics.countingAside { try body(transaction) }
        }
        statistics.add(counts)
        return result
    }

    /// `store.transactionDecided`, counting what it counts only once it commits.
    func transactionDecided<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws
        -> DecidedTransaction<T>
    {
        let decided = try await store.transactionDecided { transaction in
            try PushStatistics.countingAside { try body(transaction) }
        }
        return DecidedTransaction(
            value: decided.value.0, counts: decided.value.1, commit: decided.commit, statistics: statistics)
    }

    /// What a transaction's body decided, with its commit still to await (`committed()`) before
    /// anything it decided leaves the process.
    struct DecidedTransaction<T: Sendable>: Sendable {
        let value: T
        fileprivate let counts: CountsAside
        fileprivate let commit: PendingCommit
        fileprivate let statistics: PushStatistics

        /// Returns once the transaction has committed, and counts what it counted; throws if it did not.
        func committed() async throws {
            try await commit.committed()
            statistics.add(counts)
        }
    }

    static let day: Timestamp = 86_400_000

    /// The answer to a stanza that met a store fault that may pass (a full or read-only disk, a store
    /// not opened yet), logged once per kind and minute; nil for any other error. `wait`, so servers
    /// keep their registrations and try again; `resource-constraint`, since what is lacking is a
    /// system resource, the disk (RFC 6120 §8.3.3.18), not a defect (`internal-server-error`).
    func storeFault(_ error: any Error, during what: String) -> StanzaError? {
        guard let kind = (error as? any TransientStoreFault)?.transientKind else { return nil }
        if storeFaults.withLock({ $0.allows(kind, at: now()) }) {
            logger.error("\(what) met a store fault, answering wait (logged once a minute while it lasts): \(error)")
        }
        return StanzaError(
            .resourceConstraint, type: .wait, text: "the push store is unavailable for now; try again later")
    }

    /// A notification on the shared store's `channel` did not verify (another of the database's roles
    /// sent it, or it was damaged): it was dropped unread; counted, and logged once a minute.
    func notificationRejected(on channel: String) {
        statistics.count(.notificationRejected)
        if rejectedNotifications.withLock({ $0.allows(channel, at: now()) }) {
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
