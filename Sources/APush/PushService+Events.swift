import Store

extension PushService {
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
}
