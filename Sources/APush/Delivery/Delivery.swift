import Logging
import Sealing
import Store
import Synchronization
import XMPP

/// Sends pushes: seals each for its device, publishes it upstream within `maxInFlight` slots, and
/// records the App Server's answer (a dead token buried, a `wait` or a refusal retried until its
/// deadline). A push is kept in the store's outbox from before it leaves until its answer is recorded.
final class Delivery: Sendable {
    private let store: any PushStore
    private let settings: APushSettings
    private let statistics: PushStatistics
    private let clock: PushClock
    private let logger: Logger
    /// Rung when a retry is stored, so the background loop wakes for it.
    private let dueWork: DueWork
    private let inFlight = Mutex(0)
    /// Ephemeral keys made while there is time to spare, so a seal on the push path does one scalar
    /// multiplication instead of two.
    private let ephemeralKeys = EphemeralKeyPool()
    /// The App Server refusing us is logged once per condition and minute, not once per push.
    private let refusals = Mutex(LogLimiter(interval: 60_000, capacity: 32))
    /// The App Server's answers the store could not record (it was away), recorded when it is back.
    private let unrecorded = Mutex(UnrecordedAnswers(capacity: Delivery.unrecordedAnswersCapacity))

    /// At most this many answers wait in memory for the store (each under 100 bytes).
    static let unrecordedAnswersCapacity = 10_000

    init(
        store: any PushStore, settings: APushSettings, statistics: PushStatistics, clock: PushClock, logger: Logger,
        dueWork: DueWork
    ) {
        self.store = store
        self.settings = settings
        self.statistics = statistics
        self.clock = clock
        self.logger = logger
        self.dueWork = dueWork
    }

    private func now() -> Timestamp { clock.now() }

    /// Takes one of the `maxInFlight` upstream slots, or says there is none free.
    private func takeSlot() -> Bool {
        inFlight.withLock { count in
            guard count < settings.maxInFlight else { return false }
            count += 1
            return true
        }
    }

    var publishesInFlight: Int { inFlight.withLock { $0 } }

    /// The push with its item in the outbox (leased while it is in flight), for a push that was not
    /// stored where it was decided. Past the store's cap of retries, or when the store fails, it goes
    /// without one: once without a safety net is better than not at all.
    func storedInOutbox(_ push: OutgoingPush, registrationID: Int64, at: Timestamp) async -> OutgoingPush {
        do {
            return try await store.transaction(counting: statistics) {
                try self.enteringOutbox(push, registrationID: registrationID, at: at, in: $0)
            }
        } catch {
            logger.error("cannot store a push before sending it: \(error)")
            return push
        }
    }

    /// The push with its item put in the outbox in `transaction`, leased while it is in flight; without
    /// one past the store's cap of retries.
    func enteringOutbox(
        _ push: OutgoingPush, registrationID: Int64, at: Timestamp, in transaction: any PushTransaction
    ) throws -> OutgoingPush {
        var push = push
        push.stored = try transaction.enqueueRetry(
            outboxItem(push, registrationID: registrationID, at: at, dueAt: at + leaseMilliseconds))
        return push
    }

    /// Seals and publishes one push, then acts on the App Server's answer: a dead token is removed and
    /// buried; a `wait` or a refusal is retried until its deadline. The push is kept in the store (the
    /// outbox, leased while it is in flight) from before it is sent until its answer is recorded, so a
    /// crash in between sends it again when the lease ends (docs/wire-contract.md: delivery is at least once): callers store it first.
    @discardableResult
    func deliver(_ push: OutgoingPush, to registration: Registration, via upstream: Upstream, at: Timestamp) async
        -> UpstreamOutcome
    {
        await send(push, sealed: seal(push, for: registration), to: registration, via: upstream, at: at)
    }

    /// `deliver` of a push sealed before (while the store committed what decided it).
    func send(
        _ push: OutgoingPush, sealed: Result<Upstream.Fields, any Error>, to registration: Registration,
        via upstream: Upstream, at: Timestamp
    ) async -> UpstreamOutcome {
        let item = push.stored
        let fields: Upstream.Fields
        switch sealed {
        case .success(let sealed):
            fields = sealed
        case .failure(let error):
            logger.error("cannot seal a push for \(Fingerprint.of(registration.token)): \(error)")
            statistics.count(.push(push.kind, .unsealable))
            if let item { try? await store.deleteRetry(id: item.id) }
            return .rejected(reason: "seal")
        }
        let outcome: UpstreamOutcome
        if takeSlot() {
            let started = now()
            outcome = await upstream.publish(
                node: registration.token, pushModule: registration.pushModule,
                fields: fields)
            inFlight.withLock { $0 -= 1 }
            let latency = max(0, now() - started)
            statistics.count(.upstreamLatencyMilliseconds, by: latency)
            statistics.observe(.upstream, milliseconds: latency)
            statistics.count(.upstreamAnswers)
        } else {
            // Past the cap: not sent now, but stored and retried, since the server never retries.
            statistics.count(.upstreamInFlightCap)
            outcome = .retry(.inFlightCap)
        }
        do {
            try await record(outcome, of: push, for: registration, at: at, item: item)
        } catch {
            logger.error("cannot record the outcome of a push: \(error)")
        }
        return outcome
    }

    /// A push as the store keeps it until its answer is recorded: sealed afresh for every attempt, tried
    /// until its deadline (a call only while it can still ring).
    func outboxItem(_ push: OutgoingPush, registrationID: Int64, at: Timestamp, dueAt: Timestamp) -> RetryItem {
        let seconds = push.kind == .call ? settings.retryCallSeconds : settings.retryMessageSeconds
        return RetryItem(
            registrationID: registrationID, summary: push.json, kind: push.kind.rawValue,
            collapseChat: push.collapseChat, attempts: 0, nextAt: dueAt,
            deadline: at + Timestamp(seconds) * 1000, generation: push.generation)
    }

    /// How long a push in flight is leased: past the upstream timeout, so it is never sent again while
    /// its answer may still come.
    var leaseMilliseconds: Timestamp { Timestamp(settings.upstreamTimeoutSeconds) * 1000 + 5000 }

    private func record(
        _ outcome: UpstreamOutcome, of push: OutgoingPush, for registration: Registration,
        at: Timestamp, item stored: RetryItem?
    ) async throws {
        let kind = push.kind
        let token = Fingerprint.of(registration.token)
        switch outcome {
        case .accepted:
            statistics.count(.push(kind, .accepted))
            recordAnswered(registration, at: at, error: nil, item: stored)
        case .deadToken:
            statistics.count(.push(kind, .deadToken))
            logger.notice("the App Server says token \(token) (\(registration.pushModule)) is dead: removing it")
            // Every account's registration of the token goes, and their stored pushes with them.
            try await store.buryDeadToken(registration.token, pushModule: registration.pushModule, at: at)
        case .rejected(let reason):
            statistics.count(.push(kind, .rejected))
            logger.warning("the App Server rejected a push for \(token): \(reason)")
            recordAnswered(registration, at: at, error: reason, item: stored)
        case .retry(let reason):
            if case .refused(let condition) = reason { countRefusal(condition, kind: kind, at: at) }
            try await store.recordPush(registrationID: registration.id, at: at, error: reason.description)
            var item = stored ?? outboxItem(push, registrationID: registration.id, at: at, dueAt: at)
            item.attempts += 1
            // From when the answer came: it may have taken the whole upstream timeout.
            let answeredAt = now()
            let delay = Self.retryDelay(attempt: item.attempts)
            if answeredAt + delay > item.deadline {
                statistics.count(.push(kind, .expired))
                logger.info("giving up on a push for \(token) after \(item.attempts) attempts: \(reason)")
                if let stored { try await store.deleteRetry(id: stored.id) }
                return
            }
            statistics.count(.push(kind, .retrying))
            item.nextAt = answeredAt + delay
            if stored == nil {
                guard try await store.enqueueRetry(item) != nil else {
                    statistics.count(.push(kind, .retryCap))
                    logger.info("dropped a push for \(token): the store holds its limit of retries")
                    return
                }
            } else {
                try await store.updateRetry(item)
            }
            dueWork.ring()
        }
    }

    /// Records a push's final outcome and forgets its stored item, in one transaction that the answer to
    /// the server does not wait for: it changes nothing that answer says, and every later store call
    /// runs after it. When the store cannot record it, the answer is kept in memory and recorded once
    /// the store is back (`recordUnrecordedAnswers`), and its item is not sent again meanwhile. Should
    /// the process die first, the item is sent again when its lease ends.
    private func recordAnswered(_ registration: Registration, at: Timestamp, error: String?, item: RetryItem?) {
        let answer = UnrecordedAnswers.Answer(registrationID: registration.id, itemID: item?.id, error: error, at: at)
        store.transactionInBackground({ try Self.record(answer, in: $0) }, failed: { self.keepUnrecorded(answer, $0) })
    }

    private static func record(_ answer: UnrecordedAnswers.Answer, in transaction: any PushTransaction) throws {
        try transaction.recordPush(
            registrationID: answer.registrationID, at: answer.at, error: answer.error, removingRetry: answer.itemID)
    }

    private func keepUnrecorded(_ answer: UnrecordedAnswers.Answer, _ error: any Error) {
        logger.error("cannot record the outcome of a push (kept to record later): \(error)")
        statistics.count(.unrecordedAnswer(.kept))
        // The background loop tries to record it on its next turn, and again after each pause while the
        // store is away: then it is recorded within a second of the store's return, before its lease
        // ends and another instance on the store could send the push again.
        defer { dueWork.ring() }
        guard unrecorded.withLock({ $0.keep(answer) }) != nil else { return }
        statistics.count(.unrecordedAnswer(.dropped))
        logger.error(
            "dropped the oldest unrecorded answer: \(Self.unrecordedAnswersCapacity) wait for the store; "
                + "its push may go again when its lease ends")
    }

    /// Records the answers the store could not record before, oldest first, and stops at the first
    /// failure (the store is still away), which it throws, or, given a deadline, once it has passed.
    func recordUnrecordedAnswers(until deadline: Timestamp? = nil) async throws {
        for answer in unrecorded.withLock({ $0.answers }) {
            if let deadline, now() > deadline { return }
            try await store.transaction(counting: statistics) { try Self.record(answer, in: $0) }
            unrecorded.withLock { $0.recorded(answer) }
            statistics.count(.unrecordedAnswer(.recorded))
        }
    }

    /// Whether the App Server's answer to outbox item `itemID` waits in memory to be recorded: the
    /// item must not be sent again.
    func holdsUnrecordedAnswer(itemID: Int64) -> Bool {
        unrecorded.withLock { $0.holds(itemID: itemID) }
    }

    /// The App Server refused a push for a reason of its own (docs/wire-contract.md, answers): every registration stays, and the
    /// operator hears of it once a minute per condition.
    private func countRefusal(_ condition: StanzaError.Condition, kind: Summary.Kind, at: Timestamp) {
        let name = Statistic.counted(condition)
        statistics.count(.push(kind, .refused))
        statistics.count(.upstreamRefused(condition))
        if refusals.withLock({ $0.allows(name, at: at) }) {
            logger.error(
                "the App Server refuses our pushes (cancel/\(name)): is this component allowed to send to it? "
                    + "Registrations are kept; pushes are retried")
        }
    }

    /// 2 s, 4 s, 8 s … capped at 30 s between attempts.
    static func retryDelay(attempt: Int) -> Timestamp {
        min(30_000, 1000 << min(attempt, 5))
    }

    /// The envelope and collapse tag of `push` for `registration`'s device, or why it cannot be sealed.
    func seal(_ push: OutgoingPush, for registration: Registration) -> Result<Upstream.Fields, any Error> {
        Result {
            let plaintext = Summary.padded(
                push.json, bucket: settings.paddingBucket, limit: Envelope.maxPlaintextLength)
            let envelope = try Envelope.seal(plaintext, to: registration.deviceKey, keys: ephemeralKeys)
            let collapse = try push.collapseChat.map { chat in
                try CollapseKey(bytes: registration.collapseKey).tag(account: push.account, chat: chat)
            }
            return Upstream.Fields(envelope: envelope, kind: push.apushKind, collapse: collapse)
        }
    }
}
