/// The answers an instance passed on to the others lately, kept to pass again when an instance listens
/// again (the store came back): what it was told while it did not listen was lost, and the instance
/// that asked would send its push again when its request timed out. An answer is kept while its asker
/// may still wait for it (`keptFor`, the upstream timeout), and at most `capacity` of them, the oldest
/// dropped first.
struct RecentAnswers: Sendable {
    let capacity: Int
    let keptFor: Duration
    /// Oldest first.
    private var kept: [(message: String, until: ContinuousClock.Instant)] = []

    init(capacity: Int, keptFor: Duration) {
        self.capacity = max(1, capacity)
        self.keptFor = keptFor
    }

    /// Keeps `message`, passed on at `now`.
    mutating func keep(_ message: String, at now: ContinuousClock.Instant) {
        forgetPast(now)
        if kept.count == capacity { kept.removeFirst() }
        kept.append((message, now + keptFor))
    }

    /// The messages an asker may still wait for at `now`, oldest first; the others are forgotten.
    mutating func current(at now: ContinuousClock.Instant) -> [String] {
        forgetPast(now)
        return kept.map(\.message)
    }

    private mutating func forgetPast(_ now: ContinuousClock.Instant) {
        kept.removeAll { $0.until <= now }
    }
}
