/// Polls `condition` every `interval` until it holds; throws `WaitTimedOut` naming `what` after `timeout`.
/// A liveness bound for tests: generous, since a loaded CI machine is slow, never a speed check.
public func waitUntil(
    _ what: String, timeout: Duration = .seconds(60), every interval: Duration = .milliseconds(100),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    throw WaitTimedOut(what: what, timeout: timeout)
}

/// `waitUntil`'s condition did not hold in time.
public struct WaitTimedOut: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration

    public var description: String { "timed out after \(timeout) waiting until \(what)" }
}
