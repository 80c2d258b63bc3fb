import Store
import Synchronization

extension PushService {
    /// Applies one event to one registration: records in the store what it changes (a sighting that
    /// deduplicates, a call that may be missed, the chat's count and window, a wake) and returns the
    /// pushes to send now (often none). The account's policy is read afresh for every event, so a
    /// change applies to the next one.
    ///
    /// The writes are not returned for the caller to make: each is a check and a change in one store
    /// transaction (first sighting, the call's caller, the chat's window, the wake's interval), whose
    /// answer decides what goes; two publishes at once must not both pass it.
    func apply(
        _ classified: ClassifiedPublish, to registration: Registration, at: Timestamp,
        in transaction: any PushTransaction
    ) throws -> [OutgoingPush] {
        let policy = try policy(for: registration.account, in: transaction)
        let verdict = PolicyDecision.decide(policy, event: classified.event, at: at)
        statistics.count(.event(classified.event))
        if verdict == .drop { statistics.count(.droppedByPolicy) }
        let account = registration.account ?? classified.account
        let target = EventTarget(
            registration: registration, account: account ?? "",
            readsVisible: account != nil, policy: policy, verdict: verdict,
            window: windowMilliseconds(policy), grace: grace(of: account, policy: policy, at: at), at: at)
        switch classified.event {
        case .message(let notice):
            return try applyMessage(notice, to: target, in: transaction)
        case .call(let call):
            return try applyCall(call, to: target, in: transaction)
        case .callEnded(let sid, let endedBy, let answeredElsewhere):
            return try applyCallEnded(
                sid: sid, by: endedBy, answeredElsewhere: answeredElsewhere, to: target, in: transaction)
        case .read(let chat):
            return try applyRead(chat: chat, to: target, in: transaction)
        case .wake:
            return try applyWake(to: target, in: transaction)
        }
    }

    private func applyMessage(_ notice: MessageNotice, to target: EventTarget, in transaction: any PushTransaction)
        throws -> [OutgoingPush]
    {
        guard target.registration.takesMessages else { return [] }
        if let key = notice.dedupeKey, !(try isFirstSighting("m/" + key, for: target, in: transaction)) {
            return []
        }
        let held = HeldNotice(
            from: notice.from, id: notice.id, groupchat: notice.groupchat, mention: notice.mention,
            at: target.at)
        let (decision, pushes) = try coalesce(
            held, in: notice.chat, for: target,
            silenced: target.verdict != .deliver, in: transaction)
        switch decision {
        case .push:
            return pushes
        case .hold:
            statistics.count(.coalescedHeld)
            return []
        case .silence:
            return try withhold(
                target.verdict, registration: target.registration, account: target.account,
                at: target.at, in: transaction)
        }
    }

    private func applyCall(_ call: CallNotice, to target: EventTarget, in transaction: any PushTransaction) throws
        -> [OutgoingPush]
    {
        guard try isFirstSighting("c/" + call.sid, for: target, in: transaction) else { return [] }
        let registration = target.registration
        if registration.takesMessages {
            try transaction.rememberCall(
                PendingCall(
                    registrationID: registration.id, sid: call.sid, chat: call.chat,
                    caller: call.from, media: call.media, at: target.at))
        }
        guard registration.takesCalls, target.verdict == .deliver else { return [] }
        let summary = Summary(
            kind: .call, account: target.account, chat: call.chat, from: call.from,
            call: .init(sid: call.sid, media: call.media), ts: target.at / 1000)
        return [OutgoingPush(summary: summary, collapseChat: nil)]
    }

    private func applyCallEnded(
        sid: String, by endedBy: String, answeredElsewhere: Bool, to target: EventTarget,
        in transaction: any PushTransaction
    ) throws -> [OutgoingPush] {
        // A retract ends the call only from its caller; an answer elsewhere is the account's own.
        guard
            let call = try transaction.takeCall(
                registrationID: target.registration.id, sid: sid,
                chat: answeredElsewhere ? nil : endedBy),
            !answeredElsewhere, target.registration.takesMessages, target.verdict == .deliver
        else { return [] }
        let held = HeldNotice(from: call.chat, id: nil, groupchat: false, mention: false, at: target.at)
        return try coalesce(
            held, in: call.chat, for: target, silenced: false,
            missedCall: .init(sid: call.sid, media: call.media), in: transaction
        ).pushes
    }

    private func applyRead(chat: String, to target: EventTarget, in transaction: any PushTransaction) throws
        -> [OutgoingPush]
    {
        // A read clears the count and a held push whatever the policy; only the push obeys it.
        let (at, window) = (target.at, target.window)
        let excluded = badgeExclusions(policy: target.policy, readsVisible: target.readsVisible)
        let (due, total) = try transaction.updateChat(
            registrationID: target.registration.id, chat: chat, unreadExcluding: excluded
        ) { state, unreadBefore in
            let badge = Badge.read(excluded: excluded, before: unreadBefore)
            let countBefore = state?.count ?? 0
            let due = ChatCoalescer.read(&state, now: at, window: window)
            return (due, badge?.after(chat: chat, countBefore: countBefore, countAfter: state?.count ?? 0))
        }
        guard due, target.registration.takesReads, target.verdict == .deliver else { return [] }
        return [
            OutgoingPush(
                summary: Summary(kind: .read, account: target.account, chat: chat, badge: total, ts: at / 1000),
                collapseChat: nil)
        ]
    }

    private func applyWake(to target: EventTarget, in transaction: any PushTransaction) throws -> [OutgoingPush] {
        guard target.registration.takesMessages, target.verdict == .deliver else { return [] }
        return try wake(target.registration, account: target.account, at: target.at, in: transaction)
    }

    /// Whether `key` is seen for the first time within the dedupe window; a copy is counted.
    private func isFirstSighting(_ key: String, for target: EventTarget, in transaction: any PushTransaction) throws
        -> Bool
    {
        let since = target.at - Timestamp(settings.dedupeMinutes) * 60_000
        guard
            try transaction.firstSighting(
                registrationID: target.registration.id, key: key, at: target.at,
                since: since)
        else {
            statistics.count(.deduplicated)
            return false
        }
        return true
    }

    /// Runs the coalescer on one chat's message (a missed call is one, and waits for no window). When it
    /// says push now, the push is stored (leased while it is sent) in the same transaction, so that no
    /// crash before the App Server's answer can lose it.
    private func coalesce(
        _ held: HeldNotice, in chat: String, for target: EventTarget, silenced: Bool,
        missedCall: Summary.Call? = nil, in transaction: any PushTransaction
    ) throws -> (decision: ChatCoalescer.MessageDecision, pushes: [OutgoingPush]) {
        let registrationID = target.registration.id
        let leaseEnd = target.at + delivery.leaseMilliseconds
        let excluded = badgeExclusions(policy: target.policy, readsVisible: target.readsVisible)
        let push = { (count: Int, generation: Int64, badge: Int?) in
            OutgoingPush.message(
                account: target.account, chat: chat, notice: held, count: count, badge: badge,
                generation: generation, policy: target.policy, missedCall: missedCall)
        }
        var heldUntil: Timestamp?
        let ((decision, decided), stored) = try transaction.updateChatAndEnqueue(
            registrationID: registrationID, chat: chat, unreadExcluding: excluded
        ) { (state: inout ChatState?, unreadBefore) -> ((ChatCoalescer.MessageDecision, OutgoingPush?), RetryItem?) in
            let badge = Badge.read(excluded: excluded, before: unreadBefore)
            let countBefore = state?.count ?? 0
            let decision = ChatCoalescer.message(
                &state, registrationID: registrationID, chat: chat, notice: held,
                now: target.at, window: target.window,
                readsVisible: target.readsVisible, silenced: silenced,
                urgent: missedCall != nil, grace: target.grace)
            if decision == .hold { heldUntil = state?.windowEndsAt }
            guard case .push(let count) = decision else { return ((decision, nil), nil) }
            // Its summary is written once, for the outbox and for the seal alike.
            let total = badge?.after(chat: chat, countBefore: countBefore, countAfter: count)
            let outgoing = push(count, state?.generation ?? 0, total)
            return (
                (decision, outgoing),
                self.delivery.outboxItem(outgoing, registrationID: registrationID, at: target.at, dueAt: leaseEnd)
            )
        }
        // A hold for grace may open a window no push announced: the loop, asleep until later, must wake
        // at its end. (A coalescing window's end was announced by the push that opened it.)
        if let heldUntil { dueWork.cameDue(at: heldUntil) }
        guard var outgoing = decided else { return (decision, []) }
        dueWork.ring()
        outgoing.stored = stored
        return (decision, [outgoing])
    }

    /// What the account's other sessions tell of its grace now; nothing for a publish that names no
    /// account (stock mode), or a policy with grace off.
    func grace(of account: String?, policy: PushPolicy, at: Timestamp) -> Grace {
        guard let account, policy.graceSeconds > 0 else { return .none }
        let (lastActivity, connected) = accountSessions.withLock {
            ($0.lastActivity(of: account), $0.isConnectedElsewhere(account))
        }
        return Grace.of(policy, lastActivity: lastActivity, connectedElsewhere: connected, now: at)
    }

    /// A message its policy keeps back, as it arrives or as its window ends: in quiet hours that ask for
    /// it, a wake goes instead; otherwise nothing does.
    func withhold(
        _ verdict: PolicyDecision.Verdict, registration: Registration, account: String, at: Timestamp,
        in transaction: any PushTransaction
    ) throws -> [OutgoingPush] {
        guard verdict == .wakeInstead else {
            statistics.count(.droppedByPolicy)
            return []
        }
        statistics.count(.quietHoursWake)
        return try wake(registration, account: account, at: at, in: transaction)
    }

    /// A wake, at most one per registration per `wakeIntervalSeconds`. The store decides, not the
    /// registration read at the start of the publish: another publish may have woken it since.
    func wake(_ registration: Registration, account: String, at: Timestamp, in transaction: any PushTransaction)
        throws -> [OutgoingPush]
    {
        guard
            try transaction.recordWake(
                registrationID: registration.id, at: at,
                unlessSince: at - Timestamp(settings.wakeIntervalSeconds) * 1000)
        else {
            statistics.count(.droppedByRateLimit)
            return []
        }
        return [OutgoingPush(summary: Summary(kind: .wake, account: account, ts: at / 1000), collapseChat: nil)]
    }
}

/// One registration as an event meets it: whose it is, what its account's policy says, and when.
struct EventTarget: Sendable {
    var registration: Registration
    /// The account the push names: the registration's, else the one the bridge named, else "".
    var account: String
    /// Whether the account's reads reach the component (its account is known), so a count can wait for one.
    var readsVisible: Bool
    var policy: PushPolicy
    var verdict: PolicyDecision.Verdict
    /// The policy's coalescing window, within the operator's bounds.
    var window: Timestamp
    /// Whether the account's use of another device holds message pushes now.
    var grace: Grace
    var at: Timestamp
}
