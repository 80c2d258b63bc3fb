import Testing

@testable import Store

@Suite struct PendingCommitTests {
    private struct Failed: Error {}

    @Test func aCommitAwaitedBeforeItHappensReturnsOnceItDoes() async throws {
        let commit = PendingCommit()
        let waiting = Task { try await commit.committed() }
        try await Task.sleep(for: .milliseconds(20))
        commit.commit()
        try await waiting.value
    }

    @Test func aCommitAlreadyDoneReturnsAtOnce() async throws {
        let commit = PendingCommit()
        commit.commit()
        try await commit.committed()
        try await PendingCommit.done.committed()
    }

    @Test func aFailedCommitThrowsItsErrorToEveryWaiter() async throws {
        let commit = PendingCommit()
        let waiters = (0..<3).map { _ in Task { try await commit.committed() } }
        try await Task.sleep(for: .milliseconds(20))
        commit.fail(Failed())
        for waiter in waiters { await #expect(throws: Failed.self) { try await waiter.value } }
        await #expect(throws: Failed.self) { try await commit.committed() }
    }

    @Test func onlyTheFirstOutcomeCounts() async throws {
        let committed = PendingCommit()
        committed.commit()
        committed.fail(Failed())
        try await committed.committed()

        let failed = PendingCommit()
        failed.fail(Failed())
        failed.commit()
        await #expect(throws: Failed.self) { try await failed.committed() }
    }
}
