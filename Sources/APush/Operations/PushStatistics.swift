import Store
import Synchronization

/// Counters since start, and the part not yet added to the stored totals; and the two latency
/// histograms. admin-stats and /metrics both read these.
final class PushStatistics: Sendable {
    private struct State {
        /// By name, with the counter the name is of (several may share one, see `Statistic.counted`).
        var sinceStart: [String: (statistic: Statistic, value: Int64)] = [:]
        var unflushed: [String: Int64] = [:]
        var upstream = LatencyHistogram()
        var publish = LatencyHistogram()
    }

    private let state = Mutex(State())

    /// Counts made inside a store transaction, kept aside until it commits (`countingOnCommit`).
    @TaskLocal private static var uncommitted: UncommittedCounts?

    func count(_ statistic: Statistic, by amount: Int64 = 1) {
        if let uncommitted = Self.uncommitted {
            uncommitted.add(statistic, amount)
            return
        }
        add(statistic, amount)
    }

    private func add(_ statistic: Statistic, _ amount: Int64) {
        let name = statistic.name
        state.withLock { state in
            state.sinceStart[name, default: (statistic, 0)].value += amount
            state.unflushed[name, default: 0] += amount
        }
    }

    /// Runs one attempt of a transaction's body (on the store's thread) with what it counts kept aside,
    /// and returns those counts with its result: they are added (`add`) only once the transaction has
    /// committed, so an attempt rolled back (a fault, a deadlock lost and run again on PostgreSQL)
    /// counts nothing.
    static func countingAside<T>(_ body: () throws -> T) rethrows -> (T, CountsAside) {
        let uncommitted = UncommittedCounts()
        let result = try $uncommitted.withValue(uncommitted) { try body() }
        return (result, uncommitted.taken)
    }

    func add(_ counts: CountsAside) {
        for (statistic, amount) in counts.entries { add(statistic, amount) }
    }

    var sinceStart: [String: Int64] { state.withLock { $0.sinceStart.mapValues(\.value) } }

    /// The counts since start by the counter they are of, for /metrics.
    var sinceStartByStatistic: [(statistic: Statistic, value: Int64)] {
        state.withLock { Array($0.sinceStart.values) }
    }

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

    /// What a histogram times.
    enum Timing: Sendable {
        /// From an upstream publish sent to its answer.
        case upstream
        /// From a server's publish arriving to our answer.
        case publish
    }

    func observe(_ timing: Timing, milliseconds: Timestamp) {
        state.withLock { state in
            switch timing {
            case .upstream: state.upstream.observe(milliseconds: milliseconds)
            case .publish: state.publish.observe(milliseconds: milliseconds)
            }
        }
    }

    func histogram(_ timing: Timing) -> LatencyHistogram {
        state.withLock { state in
            switch timing {
            case .upstream: state.upstream
            case .publish: state.publish
            }
        }
    }
}

/// Durations counted into fixed buckets: observing one is a few additions, no allocation.
struct LatencyHistogram: Sendable, Equatable {
    /// The buckets' upper bounds, in milliseconds; one more bucket takes the rest (+Inf).
    static let boundsMilliseconds: [Timestamp] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000]

    /// Per bucket, not cumulative: one more than the bounds.
    private(set) var counts = [Int64](repeating: 0, count: Self.boundsMilliseconds.count + 1)
    private(set) var sumMilliseconds: Int64 = 0

    var count: Int64 { counts.reduce(0, +) }

    mutating func observe(milliseconds: Timestamp) {
        let value = max(0, milliseconds)
        let bucket = Self.boundsMilliseconds.firstIndex { value <= $0 } ?? Self.boundsMilliseconds.count
        counts[bucket] += 1
        sumMilliseconds &+= value
    }

    /// Each bound in seconds with the observations at or under it (the last, +Inf, has them all).
    var cumulative: [(upperBound: Double, count: Int64)] {
        var running: Int64 = 0
        return counts.indices.map { index in
            running += counts[index]
            let bound =
                index < Self.boundsMilliseconds.count ? Double(Self.boundsMilliseconds[index]) / 1000 : .infinity
            return (bound, running)
        }
    }
}

/// Counts a transaction made, to add once it has committed.
struct CountsAside: Sendable {
    fileprivate var entries: [(Statistic, Int64)] = []
}

private final class UncommittedCounts: Sendable {
    private let counts = Mutex(CountsAside())

    func add(_ statistic: Statistic, _ amount: Int64) {
        counts.withLock { $0.entries.append((statistic, amount)) }
    }

    var taken: CountsAside { counts.withLock { $0 } }
}
