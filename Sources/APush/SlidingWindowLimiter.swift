import Store

/// Allows each key at most `limit` uses in any `window` (milliseconds), remembering at most
/// `maximumKeys` keys: past that, keys whose uses are all older than the window are forgotten first,
/// then the key used longest ago. Pure: the caller passes the time.
struct SlidingWindowLimiter {
    let limit: Int
    let window: Timestamp
    let maximumKeys: Int
    private var uses: [String: [Timestamp]] = [:]

    init(limit: Int, window: Timestamp, maximumKeys: Int) {
        self.limit = limit
        self.window = window
        self.maximumKeys = maximumKeys
    }

    /// Counts one use of `key` at `now` and returns nil, or, when `key` is at its limit, counts nothing
    /// and returns when its next use is allowed.
    mutating func take(_ key: String, at now: Timestamp) -> Timestamp? {
        let recent = uses[key, default: []].filter { $0 > now - window }
        if recent.count >= limit, let oldest = recent.first {
            uses[key] = recent
            return oldest + window
        }
        if uses[key] == nil && uses.count >= maximumKeys {
            makeRoom(at: now)
        }
        uses[key] = recent + [now]
        return nil
    }

    var keyCount: Int { uses.count }

    private mutating func makeRoom(at now: Timestamp) {
        uses = uses.filter { $0.value.contains { $0 > now - window } }
        if uses.count >= maximumKeys,
            let stalest = uses.min(by: { ($0.value.last ?? 0) < ($1.value.last ?? 0) })?.key
        {
            uses.removeValue(forKey: stalest)
        }
    }
}
