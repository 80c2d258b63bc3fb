import Store
import Synchronization

/// Wakes the background loop when new stored work appears (a window opened, a retry queued), so it
/// can sleep until the next due time instead of polling the store.
///
/// A ring with nobody waiting is remembered, so the next wait returns at once: a ring is never lost.
/// A wait's own deadline or cancellation ends only that wait: it is never taken for a ring, so a timer
/// that fires late (after its wait ended some other way) cannot cut the next wait short. Deadlines are
/// kept on the module's clock, so tests move them by hand.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: (wait: UInt64, continuation: CheckedContinuation<Void, Never>)?
        var lastWait: UInt64 = 0
        /// A wait whose deadline or cancellation came before it began waiting.
        var endedEarly: UInt64?
    }

    private let clock: PushClock
    private let state = Mutex(State())

    init(clock: PushClock) {
        self.clock = clock
    }

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Returns at the next ring (or at once if one came since the last wait), at `deadline` on the
    /// clock, or when the task is cancelled, whichever is first.
    func wait(until deadline: Timestamp) async {
        let wait = state.withLock { state in
            state.lastWait += 1
            return state.lastWait
        }
        let timer = Task { [self, clock] in
            guard (try? await clock.sleep(deadline)) != nil else { return }
            end(wait)
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.rung || state.endedEarly == wait {
                        state.rung = false
                        state.endedEarly = nil
                        return true
                    }
                    state.waiter = (wait, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            end(wait)
        }
    }

    /// Ends `wait` if it is still waiting, without ringing.
    private func end(_ wait: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter, waiter.wait == wait else {
                if state.lastWait == wait { state.endedEarly = wait }
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }
}
