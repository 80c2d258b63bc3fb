/// What the link does between two connections: how long it waits, and what it tells the operator.
/// Pure: the run loop sleeps and logs as told.
///
/// A `conflict` means another instance holds the component JID (Prosody takes one connection per
/// JID): this one stands by and asks again every second, so it takes over within about a second of
/// the active one dying. A refused secret or an unknown JID does not heal by retrying: the rejection
/// backoff waits longer. Anything else (a lost connection, a server restarting) uses the short one.
public struct ReconnectSchedule: Sendable {
    public enum Notice: Sendable, Equatable {
        /// An ordinary loss: a warning each time.
        case warning
        /// A refused secret or an unknown JID: an error each time (the waits are long).
        case error
        /// Another instance holds the JID: said once, as this instance begins to stand by.
        case standingBy
        /// Still standing by: nothing new to say.
        case none
    }

    public struct Step: Sendable, Equatable {
        public var delay: Duration
        public var notice: Notice

        public init(delay: Duration, notice: Notice) {
            self.delay = delay
            self.notice = notice
        }
    }

    public let backoff: Backoff
    public let rejectionBackoff: Backoff
    public let standbyBackoff: Backoff
    public private(set) var isStandingBy = false
    private var attempt = 0

    public init(backoff: Backoff, rejectionBackoff: Backoff, standbyBackoff: Backoff) {
        self.backoff = backoff
        self.rejectionBackoff = rejectionBackoff
        self.standbyBackoff = standbyBackoff
    }

    /// A connection ended with `failure`, after getting ready or not; `unit` pins the jitter in tests.
    public mutating func ended(
        _ failure: ComponentStreamFailure, wasReady: Bool, unit: Double = Double.random(in: 0..<1)
    ) -> Step {
        attempt = wasReady ? 1 : attempt + 1
        if failure.isConflict {
            let notice: Notice = isStandingBy ? .none : .standingBy
            isStandingBy = true
            return Step(delay: standbyBackoff.delay(attempt: attempt, unit: unit), notice: notice)
        }
        isStandingBy = false
        let policy = failure.isRejection ? rejectionBackoff : backoff
        return Step(delay: policy.delay(attempt: attempt, unit: unit), notice: failure.isRejection ? .error : .warning)
    }

    /// The link is up. Returns whether this instance was standing by, and so takes over now.
    public mutating func connected() -> Bool {
        defer { isStandingBy = false }
        return isStandingBy
    }
}
