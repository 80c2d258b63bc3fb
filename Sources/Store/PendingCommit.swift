import Synchronization

/// The commit of a transaction whose body has already run (`PushStore.transactionDecided`): awaited
/// before anything leaves the process on the strength of what the body decided.
public final class PendingCommit: Sendable {
    private enum State {
        case pending(waiters: [CheckedContinuation<Void, any Error>])
        case committed
        case failed(any Error)
    }

    private let state: Mutex<State>

    /// A commit still to come: the first `commit()` or `fail(_:)` settles it.
    public init() { state = Mutex(.pending(waiters: [])) }

    /// One that has already happened.
    public static var done: PendingCommit {
        let commit = PendingCommit()
        commit.commit()
        return commit
    }

    /// Returns once the transaction has committed; throws its error if it did not.
    public func committed() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome: Result<Void, any Error>? = state.withLock { state in
                switch state {
                case .committed: return .success(())
                case .failed(let error): return .failure(error)
                case .pending(let waiters):
                    state = .pending(waiters: waiters + [continuation])
                    return nil
                }
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    public func commit() { settle(.success(())) }

    public func fail(_ error: any Error) { settle(.failure(error)) }

    private func settle(_ outcome: Result<Void, any Error>) {
        let waiters: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            guard case .pending(let waiters) = state else { return [] }
            switch outcome {
            case .success: state = .committed
            case .failure(let error): state = .failed(error)
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: outcome) }
    }
}

/// What a transaction's body returned, before its commit.
public struct Decided<T: Sendable>: Sendable {
    public let value: T
    public let commit: PendingCommit

    public init(_ value: T, commit: PendingCommit) {
        self.value = value
        self.commit = commit
    }
}
