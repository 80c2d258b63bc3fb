import Logging
import Sealing
import Store
import Synchronization

extension PushService {
    /// One turn of the stored work: drops what expired, moves the held notices of ended windows into the
    /// outbox, then starts sending what is due, calls first, at most `maxBackgroundDeliveries` at once.
    /// Returns without waiting for the App Server's answers, so a slow or silent App Server delays
    /// nothing else. After a restart it picks up whatever the previous process left.
    func processDueWork(upstream: Upstream) async throws {
        // First, so that an item whose answer came while the store was away is removed, not claimed. An
        // answer still unrecorded fails the turn once its other work is done, so the loop tries again
        // after its pause rather than at its next chore.
        var recordFailure: (any Error)?
        do {
            try await delivery.recordUnrecordedAnswers()
        } catch {
            recordFailure = error
        }
        let at = now()
        for (kind, count) in try await store.deleteExpiredRetries(at: at) {
            // A stored kind is counted only by a name from the fixed set.
            statistics.count(.push(Summary.Kind(rawValue: kind), .expired), by: Int64(count))
        }
        // A window that fails (a damaged row) holds up neither the other windows nor the retries; the failure
        // is thrown once the turn is done, so the loop logs it and pauses instead of spinning.
        var windowFailure: (any Error)?
        do {
            try await takeEndedWindows(at: at)
        } catch {
            windowFailure = error
        }
        try await startDueDeliveries(upstream: upstream)
        if let windowFailure { throw windowFailure }
        if let recordFailure { throw recordFailure }
    }

    /// Claims what is due, calls first, for the free background slots, and starts sending it.
    private func startDueDeliveries(upstream: Upstream) async throws {
        let slots = await dueWork.takeFreeSlots()
        guard slots > 0 else { return }
        let claimed: [RetryItem]
        do {
            let claimedAt = now()
            claimed = try await store.claimDueRetries(
                at: claimedAt, limit: slots,
                leaseUntil: claimedAt + delivery.leaseMilliseconds)
        } catch {
            dueWork.release(slots)
            throw error
        }
        dueWork.release(slots - claimed.count)
        for item in claimed {
            // Answered already, and the store could not record it yet: it stays (leased) until it can.
            if delivery.holdsUnrecordedAnswer(itemID: item.id) {
                dueWork.deliveryEnded()
                continue
            }
            Task {
                await deliverStored(item, via: upstream)
                dueWork.deliveryEnded()
            }
        }
    }

    /// Moves the held notice of each ended window into the outbox, due now, in the transaction that
    /// ends the window: from then on it is kept until the App Server has answered it. Sends nothing.
    /// Each window on its own: one that fails is left as it is, the others are taken, and the first
    /// failure is thrown at the end.
    private func takeEndedWindows(at: Timestamp) async throws {
        var firstFailure: (any Error)?
        for window in try await store.dueWindows(at: at, limit: 256) {
            do {
                try await takeEndedWindow(window, at: at)
            } catch {
                firstFailure = firstFailure ?? error
            }
        }
        if let firstFailure { throw firstFailure }
    }

    private func takeEndedWindow(_ window: ChatState, at: Timestamp) async throws {
        // A registration removed takes its chats with it.
        guard let registration = try await store.registration(id: window.registrationID) else { return }
        let account = registration.account ?? ""
        let policy = try await policy(for: registration.account)
        // After a restart nothing is known of the account's other sessions: the held push goes.
        let grace = grace(of: registration.account, policy: policy, at: at)
        let (ended, stored) = try await transaction { transaction in
            // The end of a window changes no count: the badge is the total as it stands.
            let excluded = self.badgeExclusions(policy: policy, readsVisible: registration.account != nil)
            return try transaction.updateChatAndEnqueue(
                registrationID: registration.id, chat: window.chat, unreadExcluding: excluded
            ) { state, unreadBefore -> (EndedWindow, RetryItem?) in
                let badge = Badge.read(excluded: excluded, before: unreadBefore)
                guard case .push(let held, let count) = ChatCoalescer.windowEnded(&state, now: at, grace: grace) else {
                    return (.quiet, nil)
                }
                // The held push obeys the policy as it is now: a chat muted, or quiet hours begun, during
                // the window withholds it.
                let verdict = PolicyDecision.message(
                    policy, chat: window.chat, groupchat: held.groupchat,
                    mention: held.mention, at: at)
                guard verdict == .deliver else { return (.withheld(verdict), nil) }
                let push = OutgoingPush.message(
                    account: account, chat: window.chat, notice: held, count: count, badge: badge?.before,
                    generation: state?.generation ?? 0, policy: policy)
                return (.push, self.delivery.outboxItem(push, registrationID: registration.id, at: at, dueAt: at))
            }
        }
        switch ended {
        case .quiet:
            break
        case .push where stored == nil:
            // The store holds its cap of retries: the held push cannot be kept, so it is not sent.
            statistics.count(.push(.message, .retryCap))
        case .push:
            statistics.count(.coalescedSent)
        case .withheld(let verdict):
            try await transaction { transaction in
                for push in try self.withhold(
                    verdict, registration: registration, account: account, at: at, in: transaction)
                {
                    _ = try transaction.enqueueRetry(
                        self.delivery.outboxItem(push, registrationID: registration.id, at: at, dueAt: at))
                }
            }
        }
    }

    /// Sends one claimed item. Its registration may be gone (its items go with it): nothing to send.
    private func deliverStored(_ item: RetryItem, via upstream: Upstream) async {
        do {
            guard let registration = try await store.registration(id: item.registrationID) else {
                try await store.deleteRetry(id: item.id)
                return
            }
            guard let push = OutgoingPush(retry: item, account: registration.account ?? "") else {
                // A damaged row: kept (it expires at its deadline) so that it can be repaired, never sent.
                logger.error("stored push \(item.id) has a kind this build does not know (column kind of retries)")
                return
            }
            if push.kind == .message, let chat = item.collapseChat {
                let state = try await store.updateChat(registrationID: registration.id, chat: chat) { $0 }
                guard ChatCoalescer.isCurrent(generation: item.generation, in: state) else {
                    statistics.count(.push(.message, .superseded))
                    try await store.deleteRetry(id: item.id)
                    return
                }
            }
            await delivery.deliver(push, to: registration, via: upstream, at: now())
        } catch {
            logger.error("a stored push failed: \(error)")
        }
    }

    /// Sleeps until the earliest stored window or retry is due, a new one is stored, or `deadline` (the
    /// loop's next chore), whichever comes first.
    func waitForDueWork(until deadline: Timestamp) async {
        let due = [try? await store.nextWindowEnd(), try? await store.nextRetry()].compactMap { $0 }.min()
        await dueWork.sleep(until: DueWork.wakeTime(for: min(due ?? deadline, deadline), now: now()))
    }

    /// Forgets what has expired and adds the counters to the stored totals.
    func maintain() async throws {
        let at = now()
        try await store.prune(
            tombstonesBefore: at - Self.day,
            sightingsBefore: at - Timestamp(settings.dedupeMinutes) * 60_000,
            callsBefore: at - 3_600_000, unknownAnswersBefore: at - 3_600_000,
            quietChatsBefore: at - 30 * Self.day)
        try await expireUnusedRegistrations(at: at)
        try await flushStatistics()
    }

    /// Removes the registrations unused for `registrationExpiryDays`, a bounded batch at a time (each
    /// chore takes the next), so no transaction grows with the store.
    private func expireUnusedRegistrations(at: Timestamp) async throws {
        let expired = try await store.expireRegistrations(
            unusedBefore: at - Timestamp(settings.registrationExpiryDays) * Self.day, limit: Self.expiryBatch)
        if expired > 0 {
            statistics.count(.registrationExpired, by: Int64(expired))
            logger.info("expired \(expired) registrations unused for \(settings.registrationExpiryDays) days")
        }
    }

    /// The most registrations one maintenance chore expires.
    static let expiryBatch = 10_000

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

/// What the end of a window did with its held notice.
private enum EndedWindow: Sendable {
    /// Nothing goes now: nothing was held (the burst is over), or grace holds it on to the grace's end.
    case quiet
    /// The held notice is in the outbox.
    case push
    /// The policy withholds it now (the chat muted, quiet hours begun): perhaps a wake goes instead.
    case withheld(PolicyDecision.Verdict)
}
