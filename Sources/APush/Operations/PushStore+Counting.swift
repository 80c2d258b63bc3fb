import Store

extension PushStore {
    /// `transaction`, counting into `statistics` what its body counts only once it commits
    /// (`PushStatistics.countingAside`): a transaction rolled back and run again counts once.
    func transaction<T: Sendable>(
        counting statistics: PushStatistics, _ body: @escaping @Sendable (any PushTransaction) throws -> T
    ) async throws -> T {
        let (result, counts) = try await transaction { transaction in
            try PushStatistics.countingAside { try body(transaction) }
        }
        statistics.add(counts)
        return result
    }

    /// `transactionDecided`, counting into `statistics` what its body counts only once it commits.
    func transactionDecided<T: Sendable>(
        counting statistics: PushStatistics, _ body: @escaping @Sendable (any PushTransaction) throws -> T
    ) async throws -> DecidedTransaction<T> {
        let decided = try await transactionDecided { transaction in
            try PushStatistics.countingAside { try body(transaction) }
        }
        return DecidedTransaction(
            value: decided.value.0, counts: decided.value.1, commit: decided.commit, statistics: statistics)
    }
}

/// What a transaction's body decided, with its commit still to await (`committed()`) before anything it
/// decided leaves the process.
struct DecidedTransaction<T: Sendable>: Sendable {
    let value: T
    fileprivate let counts: CountsAside
    fileprivate let commit: PendingCommit
    fileprivate let statistics: PushStatistics

    /// Returns once the transaction has committed, and counts what it counted; throws if it did not.
    func committed() async throws {
        try await commit.committed()
        statistics.add(counts)
    }
}
