import Store

/// Lets a line be logged once per key and interval (the App Server refusing us with a condition, say),
/// so a misconfiguration is one error a minute, not one per push. Pure: the caller passes the time.
/// Keys come from the wire, so it remembers at most `capacity` of them.
struct LogLimiter: Sendable {
    let interval: Timestamp
    let capacity: Int
    private var lastLogged: [String: Timestamp] = [:]

    init(interval: Timestamp, capacity: Int) {
        self.interval = interval
        self.capacity = capacity
    }

    var remembered: Int { lastLogged.count }

    /// True if `key` may be logged at `at`; then it is not again for `interval`.
    mutating func allows(_ key: String, at: Timestamp) -> Bool {
        if let last = lastLogged[key], at - last < interval { return false }
        if lastLogged[key] == nil, lastLogged.count >= capacity {
            lastLogged = lastLogged.filter { at - $0.value < interval }
            guard lastLogged.count < capacity else { return false }
        }
        lastLogged[key] = at
        return true
    }
}
