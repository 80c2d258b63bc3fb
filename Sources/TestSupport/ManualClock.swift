import Synchronization

/// A clock moved by hand, for the code under test to read and sleep on: milliseconds since 1970 (the
/// module's `Timestamp`). A sleeper returns when `advance` reaches its deadline, or throws
/// `CancellationError` when its task is cancelled; nothing waits on real time.
public final class ManualClock: Sendable {
    /// 2025-11-29T15:26:40Z, the time of the wire contract's examples.
    public static let start: Int64 = 1_764_430_000_000

    private struct Sleeper {
        var id: UInt64
        var deadline: Int64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = ManualClock.start
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
        /// Sleeps neither woken nor cancelled yet; one cancelled before it began is missing here.
        var pending: Set<UInt64> = []
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Int64 { state.withLock { $0.now } }
    public var read: @Sendable () -> Int64 { { self.now } }

    /// How many sleep now, for a test to wait until the code under test has gone to sleep.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    public func advance(seconds: Double) {
        advance(milliseconds: Int64(seconds * 1000))
    }

    /// Moves the time on and wakes every sleeper whose deadline it reached, earliest first.
    public func advance(milliseconds: Int64) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += milliseconds
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            for sleeper in due { state.pending.remove(sleeper.id) }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns once the clock reaches `deadline` (at once if it has).
    public func sleep(until deadline: Int64) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            state.pending.insert(state.nextID)
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    guard state.pending.contains(id) else { return .failure(CancellationError()) }
                    if deadline <= state.now {
                        state.pending.remove(id)
                        return .success(())
                    }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard state.pending.remove(id) != nil,
                    let index = state.sleepers.firstIndex(where: { $0.id == id })
                else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Waits (on real time, briefly) until `count` sleepers are asleep: the code under test has gone
    /// to sleep and the next `advance` will reach it.
    public func waitForSleepers(_ count: Int = 1) async throws {
        for _ in 0..<5000 where sleepers < count {
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
