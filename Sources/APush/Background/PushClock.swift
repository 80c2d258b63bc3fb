public import Store

#if canImport(Glibc)
    import Glibc
#endif

/// The module's one shape of time: wall-clock milliseconds (`Timestamp`, what the store keeps and the
/// summary says), read and slept on through this clock. Injected, so tests move every timer by hand:
/// the windows and retries, the doorbells' timeouts, the maintenance chores and the pause after a
/// failure.
public struct PushClock: Sendable {
    public var now: @Sendable () -> Timestamp
    /// Returns once `now()` has reached the deadline; throws CancellationError if the task is cancelled.
    public var sleep: @Sendable (_ until: Timestamp) async throws -> Void

    public init(now: @escaping @Sendable () -> Timestamp, sleep: @escaping @Sendable (Timestamp) async throws -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// The system's real-time clock.
    public static let system = PushClock(
        now: realTime,
        sleep: { deadline in
            try await Task.sleep(for: .milliseconds(max(0, deadline - realTime())))
        })

    private static let realTime: @Sendable () -> Timestamp = {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(spec.tv_sec) * 1000 + Timestamp(spec.tv_nsec / 1_000_000)
    }
}
