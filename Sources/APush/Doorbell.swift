import Synchronization

/// Wakes the background loop when new stored work appears (a window opened, a retry queued), so it
/// can sleep until the next due time instead of polling the store.
///
/// A ring with nobody waiting is remembered, so the next wait returns at once: a ring is never lost.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at the next ring (or at once if one came since the last wait), after `timeout`, or when
    /// the task is cancelled, whichever is first.
    func wait(upTo timeout: Duration) async {
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            ring()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
    }
}
