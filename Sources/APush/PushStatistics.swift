import Synchronization

/// Counters since start, and the part not yet added to the stored totals.
final class PushStatistics: Sendable {
    private struct State {
        var sinceStart: [String: Int64] = [:]
        var unflushed: [String: Int64] = [:]
    }

    private let state = Mutex(State())

    func count(_ statistic: Statistic, by amount: Int64 = 1) {
        let name = statistic.name
        state.withLock { state in
            state.sinceStart[name, default: 0] += amount
            state.unflushed[name, default: 0] += amount
        }
    }

    var sinceStart: [String: Int64] { state.withLock { $0.sinceStart } }

    /// Takes what is to be added to the stored totals; `restore` puts it back if storing failed.
    func takeUnflushed() -> [String: Int64] {
        state.withLock { state in
            defer { state.unflushed = [:] }
            return state.unflushed
        }
    }

    func restore(_ counts: [String: Int64]) {
        state.withLock { state in
            for (name, amount) in counts { state.unflushed[name, default: 0] += amount }
        }
    }

    /// What is counted but not stored yet, for totals that must include it.
    var unflushed: [String: Int64] { state.withLock { $0.unflushed } }
}
