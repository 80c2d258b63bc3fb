/// The pauses between accept(2) calls that fail for want of a resource (no descriptor left, no buffer):
/// the first after 10 ms, each next one twice as long, up to a second; a success starts it over. A
/// listener that stopped instead would never accept again, and one that retried at once would spin.
public struct AcceptBackoff: Sendable, Equatable {
    public static let firstPauseMicroseconds: UInt32 = 10_000
    public static let longestPauseMicroseconds: UInt32 = 1_000_000

    /// The pause after the next failure; nil while accepting works.
    private var nextPause: UInt32?

    public init() {}

    /// A failure: how long to pause before trying again, and whether it is the first of its run (the
    /// moment to say that accepting fails).
    public mutating func failed() -> (pauseMicroseconds: UInt32, first: Bool) {
        let pause = nextPause ?? Self.firstPauseMicroseconds
        defer { nextPause = min(pause * 2, Self.longestPauseMicroseconds) }
        return (pause, nextPause == nil)
    }

    /// A success: whether it ends a run of failures (the moment to say that accepting works again).
    public mutating func succeeded() -> Bool {
        defer { nextPause = nil }
        return nextPause != nil
    }
}
