import Dispatch

/// Work that blocks its thread in a system call (a connect, a send to a slow peer), run where it holds
/// nothing else up.
///
/// Never on the cooperative pool, whose few threads every task shares; nor on Dispatch's global
/// queues, whose pool on Linux is about a thread per core and grows only slowly past it, so that two
/// calls blocked there stall everything else queued there (measured on two cores: eight calls that
/// waited for each other all ran only after 5 s). Each call gets a serial queue of its own, which
/// Dispatch runs on its overcommit pool: a thread is started when none is free, and idle ones end.
public enum BlockingWork {
    /// Runs `work` on a thread of its own and returns what it returns.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            start { continuation.resume(returning: work()) }
        }
    }

    /// Runs `work` on a thread of its own and returns what it returns, or throws what it throws.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run { Result { try work() } }.get()
    }

    /// Starts `work` on a thread of its own without waiting for it.
    public static func start(_ work: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "apush.blocking-work").async(execute: work)
    }
}
