import Synchronization

/// Waiting for something from a peer took too long.
public struct TimedOut: Error, Sendable, CustomStringConvertible {
    public let waitingFor: String
    public let after: Duration

    public var description: String { "timed out after \(after) waiting for \(waitingFor)" }
}

/// What one side of a test conversation has received and not yet taken: items wait for a taker, takers
/// wait (up to a timeout) for an item they accept. Items nobody asks for stay, so nothing races.
final class Mailbox<Item: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let accepts: @Sendable (Item) -> Bool
        let continuation: CheckedContinuation<Item, any Error>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var items: [Item] = []
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    private let name: String

    init(name: String) {
        self.name = name
    }

    var items: [Item] { state.withLock { $0.items } }

    func put(_ item: Item) {
        let taker = state.withLock { state -> Waiter? in
            if let index = state.waiters.firstIndex(where: { $0.accepts(item) }) {
                return state.waiters.remove(at: index)
            }
            state.items.append(item)
            return nil
        }
        taker?.timer?.cancel()
        taker?.continuation.resume(returning: item)
    }

    /// Takes the first item `accepts` accepts, waiting up to `timeout` for one to arrive.
    func take(
        matching accepts: @escaping @Sendable (Item) -> Bool = { _ in true }, timeout: Duration,
        what: String? = nil
    ) async throws -> Item {
        let label = what ?? name
        return try await withCheckedThrowingContinuation { continuation in
            let id = state.withLock { state -> UInt64? in
                if let index = state.items.firstIndex(where: accepts) {
                    continuation.resume(returning: state.items.remove(at: index))
                    return nil
                }
                state.nextID += 1
                state.waiters.append(Waiter(id: state.nextID, accepts: accepts, continuation: continuation))
                return state.nextID
            }
            guard let id else { return }
            // Started only once the waiter is registered, so an early expiry cannot miss it.
            let timer = Task { [self] in
                try? await Task.sleep(for: timeout)
                if !Task.isCancelled { expire(id, TimedOut(waitingFor: label, after: timeout)) }
            }
            let stillWaiting = state.withLock { state -> Bool in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return false }
                state.waiters[index].timer = timer
                return true
            }
            if !stillWaiting { timer.cancel() }
        }
    }

    private func expire(_ id: UInt64, _ error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            state.waiters.firstIndex(where: { $0.id == id }).map { state.waiters.remove(at: $0) }
        }
        waiter?.continuation.resume(throwing: error)
    }
}
