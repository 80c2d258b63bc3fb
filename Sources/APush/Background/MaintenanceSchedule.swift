import Store

/// When the background loop does its housekeeping, so an idle component sleeps between chores instead
/// of polling: the counters go to the store every `flushInterval` (they are also flushed at stop), and
/// expired rows are pruned every `pruneInterval` (lookups check ages themselves; pruning only frees
/// space). The loop passes the time in.
struct MaintenanceSchedule: Equatable {
    static let flushInterval: Timestamp = 60_000
    static let pruneInterval: Timestamp = 300_000

    enum Chore: Equatable {
        /// Flush the counters.
        case flush
        /// Prune expired rows, then flush the counters.
        case prune
    }

    private(set) var nextFlush: Timestamp
    private(set) var nextPrune: Timestamp

    init(start: Timestamp) {
        nextFlush = start + Self.flushInterval
        nextPrune = start + Self.pruneInterval
    }

    /// The chore due at `now`, if any, with the next one scheduled from `now`. A clock set back starts
    /// the schedule again from `now`, so no chore is put off by more than its interval.
    mutating func due(at now: Timestamp) -> Chore? {
        if now >= nextPrune || nextPrune - now > Self.pruneInterval {
            self = MaintenanceSchedule(start: now)
            return .prune
        }
        if now >= nextFlush || nextFlush - now > Self.flushInterval {
            nextFlush = now + Self.flushInterval
            return .flush
        }
        return nil
    }

    /// When the next chore is due.
    var next: Timestamp { min(nextFlush, nextPrune) }
}
