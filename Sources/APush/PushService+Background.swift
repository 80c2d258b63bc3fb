import Sealing
import Store

extension PushService {
    /// Sends what stored work has come due: ended windows with a held notice, and retries. Runs on a
    /// timer; after a restart it picks up whatever the previous process left.
    func processDueWork(context: PushContext) async throws {
        let at = now()
        for window in try await store.dueWindows(at: at, limit: 256) {
            let decision = try await store.updateChat(registrationID: window.registrationID, chat: window.chat) { state in
                ChatCoalescer.windowEnded(&state, now: at)
            }
            guard case .push(let held, let count) = decision,
                  let registration = try await store.registration(id: window.registrationID) else { continue }
            let policy = try await policy(for: registration.account)
            // The held push obeys the policy as it is now: a chat muted, or quiet hours begun, during
            // the window silences it.
            let notice = MessageNotice(chat: window.chat, from: held.from, groupchat: held.groupchat,
                                       mention: held.mention, id: held.id, dedupeKey: nil)
            switch PolicyDecision.decide(policy, event: .message(notice), at: at) {
            case .deliver:
                break
            case .wakeInstead:
                statistics.count("quiet-hours.wake")
                for push in try await wake(registration, account: registration.account ?? "", at: at) {
                    await deliver(push, to: registration, context: context, at: at)
                }
                continue
            case .silence, .drop:
                statistics.count("dropped.policy")
                continue
            }
            statistics.count("coalesced.sent")
            let push = OutgoingPush.message(account: registration.account ?? "", chat: window.chat, notice: held,
                                            count: count, policy: policy)
            await deliver(push, to: registration, context: context, at: at)
        }
        for retry in try await store.dueRetries(at: at, limit: 256) {
            // Its deadline passed while the component was stopped or busy: a call can no longer ring.
            if at > retry.deadline {
                // A stored kind is counted only by a name from the fixed set.
                statistics.count("pushes.\(Summary.Kind(rawValue: retry.kind)?.rawValue ?? "unknown").expired")
                try await store.deleteRetry(id: retry.id)
                continue
            }
            guard let registration = try await store.registration(id: retry.registrationID),
                  let push = OutgoingPush(retry: retry, account: registration.account ?? "") else {
                try await store.deleteRetry(id: retry.id)
                continue
            }
            await deliver(push, to: registration, context: context, at: at, retry: retry)
        }
    }

    /// Sleeps until the earliest stored window or retry is due, a new one is stored, or `limit` passes
    /// (the loop also does maintenance), whichever comes first.
    func waitForDueWork(atMost limit: Duration) async {
        let next = [try? await store.nextWindowEnd(), try? await store.nextRetry()].compactMap { $0 }.min()
        let untilNext = next.map { Duration.milliseconds(max(0, $0 - now())) } ?? limit
        await dueWork.wait(upTo: min(untilNext, limit))
    }

    /// Forgets what has expired and adds the counters to the stored totals.
    func maintain() async throws {
        let at = now()
        try await store.prune(tombstonesBefore: at - Self.day,
                              sightingsBefore: at - Timestamp(settings.dedupeMinutes) * 60_000,
                              callsBefore: at - 3_600_000, unknownAnswersBefore: at - 3_600_000,
                              quietChatsBefore: at - 30 * Self.day)
        try await flushStatistics()
    }

    func flushStatistics() async throws {
        let counts = statistics.takeUnflushed()
        guard !counts.isEmpty else { return }
        do {
            try await store.increment(counts)
        } catch {
            statistics.restore(counts)
            throw error
        }
    }
}
