public import Dispatch

/// A serial executor over a `DispatchQueue`, so an actor that makes blocking calls (SQLite) runs them on
/// its own thread instead of a thread of the shared concurrency pool:
///
/// ```swift
/// actor RegistrationStore {
///     nonisolated let executor = DispatchQueueExecutor(label: "store")
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// }
/// ```
public final class DispatchQueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    /// `queue` must be serial.
    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    public convenience init(label: String) {
        self.init(queue: DispatchQueue(label: label))
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async {
            job.runSynchronously(on: self.asUnownedSerialExecutor())
        }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Lets `assumeIsolated` succeed in code already running on the queue.
    public func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
