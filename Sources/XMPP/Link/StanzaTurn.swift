import Synchronization

/// A stanza's turn among the stanzas that share its ordering key, in the order the link read them.
///
/// Stanzas are handled concurrently, so the second of two (a read after the message it reads) may
/// reach its decision first. A handler whose decision must follow the stanzas before it waits for
/// its turn (`wait`) and ends it once its decision is made (`end`): what comes after, such as waiting
/// on another entity's answer, runs alongside the next stanza's handling. The link ends every turn
/// when its handler returns, so a handler that never decides holds up no one.
public final class StanzaTurn: Sendable {
    /// The turn of the stanza the current task handles; nil for a stanza without an ordering key.
    @TaskLocal public static var current: StanzaTurn?

    private struct State {
        /// The turn before this one, until this one has waited for it.
        var previous: StanzaTurn?
        var ended = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(after previous: StanzaTurn?) {
        state = Mutex(State(previous: previous))
    }

    /// Returns once the handlers of every stanza of the key read before this one have ended their turns.
    public func wait() async {
        guard let previous = state.withLock({ $0.previous }) else { return }
        await previous.ended()
        state.withLock { $0.previous = nil }
    }

    /// Ends this turn: the next stanza of the key may decide once every turn before this one has ended
    /// too. Ending twice is ending once.
    public func end() {
        let waiters = state.withLock { state in
            state.ended = true
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    var hasEnded: Bool { state.withLock { $0.ended } }

    /// Returns once this turn and every one before it have ended (a turn may end before the one it
    /// follows: its handler failed before it came to wait).
    private func ended() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                guard !state.ended else { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        await wait()
    }
}

/// The last turn of each ordering key, kept by the link's reader. A key's entry is forgotten once its
/// turn has ended, at the latest when the keys kept pass `limit`: what it holds is bounded by the
/// stanzas in handling, not by the keys ever seen.
struct StanzaTurns {
    private var last: [String: StanzaTurn] = [:]
    private let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    var count: Int { last.count }

    /// A new turn for a stanza of `key`, after the one before it if that has not ended.
    mutating func turn(for key: String) -> StanzaTurn {
        if last.count >= limit { last = last.filter { !$0.value.hasEnded } }
        let previous = last[key].flatMap { $0.hasEnded ? nil : $0 }
        let turn = StanzaTurn(after: previous)
        last[key] = turn
        return turn
    }
}
