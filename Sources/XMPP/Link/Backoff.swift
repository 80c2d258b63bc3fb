/// Reconnection delays: `initial × multiplier^(attempt-1)`, capped at `maximum`, then spread by
/// ±`jitter` (a fraction) so that many components do not return in lockstep.
///
/// The default is capped at 1 s: connecting to a local server is cheap, and ejabberd deletes push
/// registrations while its component is away, so the component must be back within a second.
public struct Backoff: Sendable, Equatable {
    public var initial: Duration
    public var multiplier: Double
    public var maximum: Duration
    public var jitter: Double

    public init(
        initial: Duration = .milliseconds(50), multiplier: Double = 2, maximum: Duration = .seconds(1),
        jitter: Double = 0.2
    ) {
        self.initial = initial
        self.multiplier = multiplier
        self.maximum = maximum
        self.jitter = jitter
    }

    /// After a refused secret or an unknown JID, retrying quickly only floods the server's log: wait longer.
    public static let afterRejection = Backoff(
        initial: .seconds(5), multiplier: 2, maximum: .seconds(300),
        jitter: 0.2)

    /// While another instance holds the component JID: ask again every second (0.8 to 1 s), so a standby
    /// takes over within about a second of the active instance dying.
    public static let standby = Backoff(
        initial: .seconds(1), multiplier: 1, maximum: .seconds(1),
        jitter: 0.2)

    /// The delay before attempt number `attempt` (1 for the first retry); `unit` is a random number in
    /// [0, 1) so tests can pin the jitter.
    public func delay(attempt: Int, unit: Double = Double.random(in: 0..<1)) -> Duration {
        let exponent = Double(max(0, attempt - 1))
        let base = min(seconds(initial) * pow(multiplier, exponent), seconds(maximum))
        let spread = base * jitter * (unit * 2 - 1)
        let value = min(max(0, base + spread), seconds(maximum))
        // Not via Int64 nanoseconds: a configured cap past 292 years would trap there.
        return .seconds(value)
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var remaining = Int(exponent)
        while remaining > 0 && result < 1e12 {
            result *= base
            remaining -= 1
        }
        return result
    }
}
