import Store

/// The coalescing state machine of one registration's chat (docs/wire-contract.md, Coalescing). Pure: the caller passes
/// the stored state and the time, and stores what is left.
enum ChatCoalescer {
    enum MessageDecision: Sendable, Equatable {
        /// Push now with this count; a window is open from now on.
        case push(count: Int)
        /// A window is open: the notice waits for its end.
        case hold
        /// Policy silences the chat: counted, nothing pushed, no window.
        case silence
    }

    enum WindowDecision: Sendable, Equatable {
        /// Push the held notice with the latest count; the window reopens.
        case push(HeldNotice, count: Int)
        /// A quiet window: the burst is over.
        case close
        /// Not due (a read or a restart moved it).
        case notDue
        /// The account is still within its grace: the notice stays held, the window now ends with the grace.
        case graceHolds(until: Timestamp)
    }

    /// Where reads cannot be seen (stock mode), the count restarts after an hour without a message.
    static let countLifetimeWithoutReads: Timestamp = 3_600_000

    static func message(
        _ state: inout ChatState?, registrationID: Int64, chat: String, notice: HeldNotice, now: Timestamp,
        window: Timestamp, readsVisible: Bool, silenced: Bool, urgent: Bool = false, grace: Grace = .none
    ) -> MessageDecision {
        // A new chat counts its generations from when it begins, so a push decided in an earlier life of
        // the chat (forgotten since) is not taken for one of this life.
        var current =
            state ?? ChatState(registrationID: registrationID, chat: chat, windowMilliseconds: window, generation: now)
        if !readsVisible, let last = current.lastMessageAt, now - last >= countLifetimeWithoutReads {
            current.count = 0
        }
        current.count += 1
        current.generation += 1
        current.lastMessageAt = now
        current.windowMilliseconds = window
        defer { state = current }
        if silenced { return .silence }
        if urgent { return push(&current, now: now, window: window) }
        // Grace holds the notice in the chat's window, which ends no earlier than the grace does.
        if let graceEnd = grace.end(holding: notice, now: now) {
            current.held = notice
            current.windowEndsAt = max(current.windowEndsAt ?? graceEnd, graceEnd)
            return .hold
        }
        if let end = current.windowEndsAt, end > now {
            // A notice grace does not hold (a mention it lets through, or the grace is over) waits no
            // longer than coalescing would: a window with nothing shown since the last read is grace's
            // alone, and one that ends past a window from now was moved on by grace.
            guard current.noticedSinceRead else { return push(&current, now: now, window: window) }
            current.held = notice
            current.windowEndsAt = min(end, now + window)
            return .hold
        }
        return push(&current, now: now, window: window)
    }

    private static func push(_ current: inout ChatState, now: Timestamp, window: Timestamp) -> MessageDecision {
        current.windowEndsAt = now + window
        current.held = nil
        current.noticedSinceRead = true
        return .push(count: current.count)
    }

    /// Whether a stored message push decided at `generation` may still be sent (again, after a crash or
    /// a `wait`): only while its chat has decided nothing since. A later message (pushed, held for its
    /// window's end, or silenced) or a read moved the generation on; sent anyway, the old notice would
    /// land after the newer one and, by its collapse tag, replace it on the device. The count cannot
    /// tell: after a read and a new message it is back to the old push's. A chat forgotten and begun
    /// again counts from when it began: a push of its earlier life is stale too. A chat forgotten since
    /// (its state evicted) cannot tell: the push goes.
    static func isCurrent(generation: Int64, in state: ChatState?) -> Bool {
        state.map { $0.generation == generation } ?? true
    }

    /// The chat's window ended. A held notice goes with the latest count, unless the account is still
    /// within its grace: then its window ends with the grace, a time to come (never a spin).
    static func windowEnded(_ state: inout ChatState?, now: Timestamp, grace: Grace = .none) -> WindowDecision {
        guard var current = state, let end = current.windowEndsAt, end <= now else { return .notDue }
        defer { state = current }
        guard let held = current.held else {
            current.windowEndsAt = nil
            return .close
        }
        if let graceEnd = grace.end(holding: held, now: now) {
            current.windowEndsAt = graceEnd
            return .graceHolds(until: graceEnd)
        }
        current.held = nil
        current.windowEndsAt = now + current.windowMilliseconds
        current.noticedSinceRead = true
        current.generation += 1
        return .push(held, count: current.count)
    }

    /// The account read the chat: the count resets and a held push is cancelled. Returns whether a
    /// read push is due: only after a notice since the last read, at most one per window.
    static func read(_ state: inout ChatState?, now: Timestamp, window: Timestamp) -> Bool {
        guard var current = state else { return false }
        defer { state = current }
        current.count = 0
        current.generation += 1
        current.held = nil
        current.windowEndsAt = nil
        guard current.noticedSinceRead else { return false }
        if let last = current.lastReadPushAt, now - last < window { return false }
        current.noticedSinceRead = false
        current.lastReadPushAt = now
        return true
    }
}
