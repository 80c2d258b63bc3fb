import Store

/// A token bucket per account for its commands: `burst` at once, then one more every `interval`.
/// Commands share the handler cap and the store with the server's publishes, so one account's script
/// cannot crowd them out. Pure: the caller passes the time.
///
/// Each account is kept as the time its bucket is full again; at most `capacity` are tracked. Past it
/// the accounts whose bucket is full again are forgotten (they lose nothing), and if none is, a new
/// account waits too: nothing an account does grows the limiter.
struct CommandRateLimiter: Sendable {
    let burst: Int
    let interval: Timestamp
    let capacity: Int
    private var fullAgainAt: [String: Timestamp] = [:]

    init(burst: Int, interval: Timestamp, capacity: Int) {
        self.burst = burst
        self.interval = interval
        self.capacity = capacity
    }

    var tracked: Int { fullAgainAt.count }

    /// Takes one command of `account` at `at` and returns nil; or, with its bucket empty, takes none
    /// and returns when its next command is allowed.
    mutating func take(_ account: String, at: Timestamp) -> Timestamp? {
        let fullAgain = max(fullAgainAt[account] ?? at, at) + interval
        let allowedAt = fullAgain - Timestamp(burst) * interval
        guard allowedAt <= at else { return allowedAt }
        if fullAgainAt[account] == nil, fullAgainAt.count >= capacity {
            fullAgainAt = fullAgainAt.filter { $0.value > at }
            guard fullAgainAt.count < capacity else { return at + interval }
        }
        fullAgainAt[account] = fullAgain
        return nil
    }
}
