#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Sealing
import Store
import Synchronization
import XMLStream
import XMPP

/// The push path: intake → classify → coalesce → summary → seal → publish upstream → answer.
///
/// Decisions are made by the pure parts (EventClassifier, ChatCoalescer, UpstreamOutcome); this type
/// only wires them to the store, the clock and the link.
final class PushService: Sendable {
    let store: any PushStore
    let settings: APushSettings
    let statistics = PushStatistics()
    let now: @Sendable () -> Timestamp
    let logger: Logger
    private let inFlight = Mutex(0)
    /// Rung when a window opens or a retry is stored, so the background loop wakes for it.
    let dueWork = Doorbell()
    /// Background deliveries in flight, and a bell rung as each ends (a slot is free again).
    let background = Mutex(0)
    let backgroundDeliveryEnded = Doorbell()
    private let policies = Mutex(PolicyCache())
    /// `#test` pushes per account (the test push itself bypasses every other limit, PROTOCOL.md §9).
    let testPushes = Mutex(SlidingWindowLimiter(limit: APushCommands.testPushesPerMinute, window: 60_000,
                                                maximumKeys: 10_000))
    /// The App Server refusing us is logged once per condition and minute, not once per push.
    private let refusals = Mutex(LogLimiter(interval: 60_000, capacity: 32))
    /// A store fault fails every stanza alike while it lasts: logged once per kind and minute.
    private let storeFaults = Mutex(LogLimiter(interval: 60_000, capacity: 32))

    init(store: any PushStore, settings: APushSettings, logger: Logger,
         now: @escaping @Sendable () -> Timestamp = PushService.wallClock) {
        self.store = store
        self.settings = settings
        self.logger = logger
        self.now = now
    }

    static let wallClock: @Sendable () -> Timestamp = {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(spec.tv_sec) * 1000 + Timestamp(spec.tv_nsec / 1_000_000)
    }

    // MARK: Intake

    /// Answers one publish from the server: returns for a `result`, throws the error to answer with.
    func handlePublish(_ iq: Element, context: PushContext) async throws(StanzaError) {
        let answer: ServerAnswer
        do {
            let publish = try IncomingPublish(iq: iq, servedDomains: context.servedDomains)
            answer = try await handle(publish, context: context)
        } catch let error as StanzaError {
            statistics.count("answers.error.\(error.condition.rawValue)")
            logger.info("refused a publish: \(error.text ?? error.condition.rawValue)")
            throw error
        } catch let error as StoreCapacityError {
            logger.warning("a publish for a new registration was refused: \(error)")
            answer = .wait(.resourceConstraint)
        } catch {
            if let fault = storeFault(error, during: "a publish") {
                answer = .wait(fault.condition)
            } else {
                logger.error("a publish failed: \(error)")
                answer = .wait(.internalServerError)
            }
        }
        statistics.count("answers.\(answer.statisticsName)")
        if let error = answer.error { throw error }
    }

    /// The answer to a stanza that met a store fault that may pass (a full or read-only disk, a store
    /// not opened yet), logged once per kind and minute; nil for any other error. `wait`, so servers
    /// keep their registrations and try again; `resource-constraint`, since what is lacking is a
    /// system resource, the disk (RFC 6120 §8.3.3.18), not a defect (`internal-server-error`).
    func storeFault(_ error: any Error, during what: String) -> StanzaError? {
        guard let kind = (error as? any TransientStoreFault)?.transientKind else { return nil }
        if storeFaults.withLock({ $0.allows(kind, at: now()) }) {
            logger.error("\(what) met a store fault, answering wait (logged once a minute while it lasts): \(error)")
        }
        return StanzaError(.resourceConstraint, type: .wait, text: "the push store is unavailable for now; try again later")
    }

    /// Runs a command or a bridge report, answering a store fault as `storeFault` does.
    func answeringStoreFaults<T>(during what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw storeFault(error, during: what) ?? error
        }
    }

    /// Takes one of the `maxInFlight` upstream slots, or says there is none free.
    private func takeSlot() -> Bool {
        inFlight.withLock { count in
            guard count < settings.maxInFlight else { return false }
            count += 1
            return true
        }
    }

    var publishesInFlight: Int { inFlight.withLock { $0 } }

    /// Stored pushes being sent by the background work, at most `settings.maxBackgroundDeliveries`.
    var backgroundDeliveries: Int { background.withLock { $0 } }

    private func handle(_ publish: IncomingPublish, context: PushContext) async throws -> ServerAnswer {
        let at = now()
        let classified = EventClassifier.classify(publish.notification)
        let registration: Registration
        if let options = publish.options {
            guard let registered = try await store.registerUnlessBuried(
                options.request(domain: publish.domain, token: publish.token, account: classified.account),
                freshCollapseKey: CollapseKey.random().bytes, now: at, buriedSince: at - Self.day) else {
                statistics.count("answers.tombstone")
                return .gone
            }
            registration = registered
        } else if let stored = try await store.registration(domain: publish.domain, token: publish.token,
                                                            account: classified.account) {
            registration = stored
        } else if try await store.isBuried(token: publish.token, pushModule: nil, account: classified.account,
                                           since: at - Self.day) {
            statistics.count("answers.tombstone")
            return .gone
        } else {
            return try await answerUnknownNode(at: at, token: publish.token)
        }
        let pushes = try await decide(classified, for: registration, at: at)
        var answer = ServerAnswer.accepted
        for push in pushes {
            let outcome = await deliver(push, to: registration, context: context, at: at)
            if outcome == .deadToken { answer = .gone }
            if case .retry(let reason) = outcome, answer == .accepted { answer = reason.serverAnswer }
        }
        return answer
    }

    static let day: Timestamp = 86_400_000

    /// An unknown node is answered `cancel` so the server drops it, but only a few times an hour.
    private func answerUnknownNode(at: Timestamp, token: String) async throws -> ServerAnswer {
        guard try await store.recordUnknownNodeAnswer(at: at, since: at - 3_600_000,
                                                      limit: settings.unknownNodeCancelsPerHour) else {
            logger.warning("publish for an unknown node \(Fingerprint.of(token)); the hourly cap of cancel answers is reached, answering wait")
            statistics.count("unknown-node.capped")
            return .wait(.resourceConstraint)
        }
        logger.notice("publish for an unknown node \(Fingerprint.of(token)) with no publish-options: answering cancel")
        statistics.count("unknown-node.cancelled")
        return .gone
    }

    // MARK: Decisions

    /// What one event means for one registration: the pushes to send now (often none). The account's
    /// policy is read afresh for every event, so a change applies to the next one.
    func decide(_ classified: ClassifiedPublish, for registration: Registration, at: Timestamp) async throws
        -> [OutgoingPush] {
        let account = registration.account ?? classified.account ?? ""
        let ts = at / 1000
        let readsVisible = registration.account != nil || classified.account != nil
        let dedupeSince = at - Timestamp(settings.dedupeMinutes) * 60_000
        let policy = try await policy(for: registration.account)
        let window = windowMilliseconds(policy)
        let verdict = PolicyDecision.decide(policy, event: classified.event, at: at)
        statistics.count("events.\(classified.event.kindName)")
        if verdict == .drop { statistics.count("dropped.policy") }
        switch classified.event {
        case .message(let notice):
            guard registration.takesMessages else { return [] }
            if let key = notice.dedupeKey,
               !(try await store.firstSighting(registrationID: registration.id, key: "m/" + key, at: at,
                                               since: dedupeSince)) {
                statistics.count("deduplicated")
                return []
            }
            let held = HeldNotice(from: notice.from, id: notice.id, groupchat: notice.groupchat,
                                  mention: notice.mention, at: at)
            let silenced = verdict != .deliver
            let (decision, pushes) = try await coalesce(registration, chat: notice.chat, at: at) { count in
                .message(account: account, chat: notice.chat, notice: held, count: count, policy: policy)
            } decide: { state in
                ChatCoalescer.message(&state, registrationID: registration.id, chat: notice.chat, notice: held,
                                      now: at, window: window, readsVisible: readsVisible, silenced: silenced)
            }
            switch decision {
            case .push:
                return pushes
            case .hold:
                statistics.count("coalesced.held")
                return []
            case .silence where verdict == .wakeInstead:
                statistics.count("quiet-hours.wake")
                return try await wake(registration, account: account, at: at)
            case .silence:
                statistics.count("dropped.policy")
                return []
            }

        case .call(let call):
            if !(try await store.firstSighting(registrationID: registration.id, key: "c/" + call.sid, at: at,
                                               since: dedupeSince)) {
                statistics.count("deduplicated")
                return []
            }
            if registration.takesMessages {
                try await store.rememberCall(PendingCall(registrationID: registration.id, sid: call.sid,
                                                         chat: call.chat, caller: call.from, media: call.media, at: at))
            }
            guard registration.takesCalls, verdict == .deliver else { return [] }
            let summary = Summary(kind: .call, account: account, chat: call.chat, from: call.from,
                                  call: .init(sid: call.sid, media: call.media), ts: ts)
            return [OutgoingPush(summary: summary, collapseChat: nil)]

        case .callEnded(let sid, let endedBy, let answeredElsewhere):
            // A retract ends the call only from its caller; an answer elsewhere is the account's own.
            guard let call = try await store.takeCall(registrationID: registration.id, sid: sid,
                                                      chat: answeredElsewhere ? nil : endedBy),
                  !answeredElsewhere, registration.takesMessages, verdict == .deliver else { return [] }
            let held = HeldNotice(from: call.chat, id: nil, groupchat: false, mention: false, at: at)
            return try await coalesce(registration, chat: call.chat, at: at) { count in
                .message(account: account, chat: call.chat, notice: held, count: count, policy: policy,
                         missedCall: .init(sid: call.sid, media: call.media))
            } decide: { state in
                ChatCoalescer.message(&state, registrationID: registration.id, chat: call.chat, notice: held,
                                      now: at, window: window, readsVisible: readsVisible, silenced: false,
                                      urgent: true)
            }.pushes

        case .read(let chat):
            // A read clears the count and a held push whatever the policy; only the push obeys it.
            let due = try await store.updateChat(registrationID: registration.id, chat: chat) { state in
                ChatCoalescer.read(&state, now: at, window: window)
            }
            guard due, registration.takesReads, verdict == .deliver else { return [] }
            return [OutgoingPush(summary: Summary(kind: .read, account: account, chat: chat, ts: ts), collapseChat: nil)]

        case .wake:
            guard registration.takesMessages, verdict == .deliver else { return [] }
            return try await wake(registration, account: account, at: at)
        }
    }

    /// Runs the coalescer on one chat. When it says push now, the push is stored (leased while it is sent)
    /// in the same transaction, so that no crash before the App Server's answer can lose it.
    private func coalesce(_ registration: Registration, chat: String, at: Timestamp,
                          push: @escaping @Sendable (_ count: Int) -> OutgoingPush,
                          decide: @escaping @Sendable (inout ChatState?) -> ChatCoalescer.MessageDecision) async throws
        -> (decision: ChatCoalescer.MessageDecision, pushes: [OutgoingPush]) {
        let leaseEnd = at + leaseMilliseconds
        let (decision, stored) = try await store.updateChatAndEnqueue(registrationID: registration.id, chat: chat) {
            state in
            let decision = decide(&state)
            guard case .push(let count) = decision else { return (decision, nil) }
            return (decision, self.outboxItem(push(count), registrationID: registration.id, at: at, dueAt: leaseEnd))
        }
        guard case .push(let count) = decision else { return (decision, []) }
        dueWork.ring()
        var outgoing = push(count)
        outgoing.stored = stored
        return (decision, [outgoing])
    }

    /// A wake, at most one per registration per `wakeIntervalSeconds`. The store decides, not the
    /// registration read at the start of the publish: another publish may have woken it since.
    func wake(_ registration: Registration, account: String, at: Timestamp) async throws -> [OutgoingPush] {
        guard try await store.recordWake(registrationID: registration.id, at: at,
                                         unlessSince: at - Timestamp(settings.wakeIntervalSeconds) * 1000) else {
            statistics.count("dropped.rate-limit")
            return []
        }
        return [OutgoingPush(summary: Summary(kind: .wake, account: account, ts: at / 1000), collapseChat: nil)]
    }

    /// The operator's defaults (config, then those stored through admin-policy), then the account's own.
    /// Kept in memory once resolved (decoding it cost more than a store round trip, on every event);
    /// every change goes through `setPolicy`, which forgets them all.
    func policy(for account: String?) async throws -> PushPolicy {
        let key = account ?? ""
        let (known, generation) = policies.withLock { ($0.policy(for: key), $0.generation) }
        if let known { return known }
        let resolved = try await resolvePolicy(for: account)
        policies.withLock { $0.store(resolved, for: key, resolvedAt: generation) }
        return resolved
    }

    /// Stores an account's override (or the defaults, for a nil account); nil removes it.
    func setPolicy(account: String?, json: String?) async throws {
        try await store.setPolicy(account: account, json: json)
        policies.withLock { $0.invalidate() }
    }

    private func resolvePolicy(for account: String?) async throws -> PushPolicy {
        var document = try Self.dictionary(settings.defaults.json)
        if let stored = try await store.policy(account: nil) {
            document.merge(try Self.dictionary(stored)) { $1 }
        }
        if let account, let own = try await store.policy(account: account) {
            document.merge(try Self.dictionary(own)) { $1 }
        }
        let data = try JSONSerialization.data(withJSONObject: document)
        return try JSONDecoder().decode(PushPolicy.self, from: data)
    }

    private static func dictionary(_ json: String) throws -> [String: Any] {
        (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
    }

    /// The policy's window, kept within the operator's bounds.
    func windowMilliseconds(_ policy: PushPolicy) -> Timestamp {
        Timestamp(min(max(policy.coalesceSeconds, settings.coalesceMinSeconds), settings.coalesceMaxSeconds)) * 1000
    }

    // MARK: Delivery

    /// Seals and publishes one push, then acts on the App Server's answer: a dead token is removed and
    /// buried; a `wait` or a refusal is retried until its deadline. The push is kept in the store (the
    /// outbox, leased while it is in flight) from before it is sent until its answer is recorded, so a
    /// crash in between sends it again when the lease ends (§7).
    @discardableResult
    func deliver(_ push: OutgoingPush, to registration: Registration, context: PushContext, at: Timestamp) async
        -> UpstreamOutcome {
        var item = push.stored
        if item == nil {
            var fresh = outboxItem(push, registrationID: registration.id, at: at, dueAt: at + leaseMilliseconds)
            do {
                // Past the store's cap of retries it goes without one, as when the store fails.
                if let id = try await store.enqueueRetry(fresh) {
                    fresh.id = id
                    item = fresh
                }
            } catch {
                // Sent all the same: once without a safety net is better than not at all.
                logger.error("cannot store a push before sending it: \(error)")
            }
        }
        let fields: Upstream.Fields
        do {
            fields = try seal(push, for: registration)
        } catch {
            logger.error("cannot seal a push for \(Fingerprint.of(registration.token)): \(error)")
            statistics.count("pushes.\(push.kind.rawValue).unsealable")
            if let item { try? await store.deleteRetry(id: item.id) }
            return .rejected(reason: "seal")
        }
        let outcome: UpstreamOutcome
        if takeSlot() {
            let started = ContinuousClock.now
            outcome = await context.upstream.publish(node: registration.token, pushModule: registration.pushModule,
                                                     fields: fields)
            inFlight.withLock { $0 -= 1 }
            let latency = ContinuousClock.now - started
            statistics.count("upstream.latency-ms", by: latency.components.seconds * 1000
                + latency.components.attoseconds / 1_000_000_000_000_000)
            statistics.count("upstream.answers")
        } else {
            // Past the cap: not sent now, but stored and retried, since the server never retries.
            statistics.count("upstream.in-flight-cap")
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
        return RetryItem(registrationID: registrationID, summary: push.json, kind: push.kind.rawValue,
                         collapseChat: push.collapseChat, attempts: 0, nextAt: dueAt,
                         deadline: at + Timestamp(seconds) * 1000)
    }

    /// How long a push in flight is leased: past the upstream timeout, so it is never sent again while
    /// its answer may still come.
    var leaseMilliseconds: Timestamp { Timestamp(settings.upstreamTimeoutSeconds) * 1000 + 5000 }

    private func record(_ outcome: UpstreamOutcome, of push: OutgoingPush, for registration: Registration,
                        at: Timestamp, item stored: RetryItem?) async throws {
        let kind = push.kind.rawValue
        let token = Fingerprint.of(registration.token)
        switch outcome {
        case .accepted:
            statistics.count("pushes.\(kind).accepted")
            try await recordAnswered(registration, at: at, error: nil, item: stored)
        case .deadToken:
            statistics.count("pushes.\(kind).dead-token")
            logger.notice("the App Server says token \(token) (\(registration.pushModule)) is dead: removing it")
            // Every account's registration of the token goes, and their stored pushes with them.
            try await store.buryDeadToken(registration.token, pushModule: registration.pushModule, at: at)
        case .rejected(let reason):
            statistics.count("pushes.\(kind).rejected")
            logger.warning("the App Server rejected a push for \(token): \(reason)")
            try await recordAnswered(registration, at: at, error: reason, item: stored)
        case .retry(let reason):
            if case .refused(let condition) = reason { countRefusal(condition, kind: kind, at: at) }
            try await store.recordPush(registrationID: registration.id, at: at, error: reason.description)
            var item = stored ?? outboxItem(push, registrationID: registration.id, at: at, dueAt: at)
            item.attempts += 1
            // From when the answer came: it may have taken the whole upstream timeout.
            let answeredAt = now()
            let delay = Self.retryDelay(attempt: item.attempts)
            if answeredAt + delay > item.deadline {
                statistics.count("pushes.\(kind).expired")
                logger.info("giving up on a push for \(token) after \(item.attempts) attempts: \(reason)")
                if let stored { try await store.deleteRetry(id: stored.id) }
                return
            }
            statistics.count("pushes.\(kind).retrying")
            item.nextAt = answeredAt + delay
            if stored == nil {
                guard try await store.enqueueRetry(item) != nil else {
                    statistics.count("pushes.\(kind).retry-cap")
                    logger.info("dropped a push for \(token): the store holds its limit of retries")
                    return
                }
            } else {
                try await store.updateRetry(item)
            }
            dueWork.ring()
        }
    }

    /// Records a push's final outcome and forgets its stored item, in one transaction.
    private func recordAnswered(_ registration: Registration, at: Timestamp, error: String?, item: RetryItem?)
        async throws {
        if let item {
            try await store.recordPush(registrationID: registration.id, at: at, error: error, removingRetry: item.id)
        } else {
            try await store.recordPush(registrationID: registration.id, at: at, error: error)
        }
    }

    /// The App Server refused a push for a reason of its own (§3.1): every registration stays, and the
    /// operator hears of it once a minute per condition.
    private func countRefusal(_ condition: StanzaError.Condition, kind: String, at: Timestamp) {
        // Conditions come from the wire: only those RFC 6120 defines name a counter.
        let name = StanzaError.Condition.defined[condition] == nil ? "other" : condition.rawValue
        statistics.count("pushes.\(kind).refused")
        statistics.count("upstream.refused.\(name)")
        if refusals.withLock({ $0.allows(name, at: at) }) {
            logger.error("the App Server refuses our pushes (cancel/\(name)): is this component allowed to send to it? "
                + "Registrations are kept; pushes are retried")
        }
    }

    /// Removes a registration by command and leaves a tombstone for its account only, so the server's
    /// next publishes for it are answered `cancel` and the server drops its own copy (until the client
    /// enables again, or a day passes); another account's registration of the token is untouched.
    func retire(_ registration: Registration, at: Timestamp) async throws {
        try await store.retire(registrationID: registration.id, at: at)
    }

    /// 2 s, 4 s, 8 s … capped at 30 s between attempts.
    static func retryDelay(attempt: Int) -> Timestamp {
        min(30_000, 1000 << min(attempt, 5))
    }

    private func seal(_ push: OutgoingPush, for registration: Registration) throws -> Upstream.Fields {
        let plaintext = Summary.padded(push.json, bucket: settings.paddingBucket, limit: Envelope.maxPlaintextLength)
        let envelope = try Envelope.seal(plaintext, to: registration.deviceKey)
        let collapse = try push.collapseChat.map { chat in
            try CollapseKey(bytes: registration.collapseKey).tag(account: push.account, chat: chat)
        }
        return Upstream.Fields(envelope: envelope, kind: push.apushKind, collapse: collapse)
    }
}

/// Resolved policies by account (the defaults under ""). A resolution that read the store before a
/// change must not be kept after it, or the change would never apply: the generation tells.
struct PolicyCache: Sendable {
    private var entries: [String: PushPolicy] = [:]
    private(set) var generation = 0

    func policy(for key: String) -> PushPolicy? { entries[key] }

    mutating func store(_ policy: PushPolicy, for key: String, resolvedAt generation: Int) {
        guard generation == self.generation else { return }
        entries[key] = policy
    }

    mutating func invalidate() {
        entries.removeAll()
        generation += 1
    }
}

/// One push to send: the summary's JSON and, for a message, the account and chat its collapse tag names.
struct OutgoingPush: Sendable, Equatable {
    var kind: Summary.Kind
    var json: String
    var account: String
    var collapseChat: String?
    /// Its item in the store (the outbox), once it is stored: kept until its answer is recorded.
    var stored: RetryItem?

    init(summary: Summary, collapseChat: String?) {
        kind = summary.kind
        json = summary.json
        account = summary.account
        self.collapseChat = collapseChat
    }

    /// A stored retry, sealed afresh.
    init?(retry: RetryItem, account: String) {
        guard let kind = Summary.Kind(rawValue: retry.kind) else { return nil }
        self.kind = kind
        json = retry.summary
        self.account = account
        collapseChat = retry.collapseChat
        stored = retry
    }

    /// A message notice; with the sender hidden it says only that there is something, in no chat.
    static func message(account: String, chat: String, notice: HeldNotice, count: Int, policy: PushPolicy,
                        missedCall: Summary.Call? = nil) -> OutgoingPush {
        var summary = Summary(kind: .message, account: account, chat: chat, groupchat: notice.groupchat,
                              from: notice.from, count: count, mention: notice.mention, id: notice.id,
                              ts: notice.at / 1000)
        if let missedCall {
            summary.missed = true
            summary.call = missedCall
        }
        if policy.sender == .hidden {
            summary.chat = ""
            summary.from = nil
            summary.id = nil
            summary.groupchat = false
            summary.mention = false
            summary.call = nil
        }
        return OutgoingPush(summary: summary, collapseChat: chat)
    }

    /// apushKind: absent for a message, `voip` for a call.
    var apushKind: String? {
        switch kind {
        case .message: nil
        case .call: "voip"
        case .read: "read"
        case .wake: "wake"
        }
    }
}

/// What the push path needs of the host for one call.
struct PushContext: Sendable {
    var servedDomains: Set<String>
    var upstream: Upstream
}

extension ServerAnswer {
    var statisticsName: String {
        switch self {
        case .accepted: "result"
        case .gone: "cancel"
        case .wait: "wait"
        }
    }
}
