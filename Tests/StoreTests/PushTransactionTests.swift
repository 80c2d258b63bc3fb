import Testing

@testable import Store

@Suite struct PushTransactionTests {
    private struct Abort: Error {}

    @Test(arguments: StoreKind.allCases)
    func stepsInOneTransactionSeeEachOther(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let (first, again) = try await store.transaction { transaction in
                (
                    try transaction.firstSighting(registrationID: id, key: "k", at: 1_000, since: 0),
                    try transaction.firstSighting(registrationID: id, key: "k", at: 1_000, since: 0)
                )
            }
            #expect(first && !again)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aThrowRollsBackEveryStep(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            await #expect(throws: Abort.self) {
                try await store.transaction { transaction in
                    _ = try transaction.firstSighting(registrationID: id, key: "k", at: 1_000, since: 0)
                    _ = try transaction.updateChatAndEnqueue(registrationID: id, chat: "bob@example.org") { state in
                        state = ChatState(registrationID: id, chat: "bob@example.org", count: 1)
                        let item = RetryItem(
                            registrationID: id, summary: "{}", kind: "message", collapseChat: "bob@example.org",
                            attempts: 0, nextAt: 1_000, deadline: 60_000)
                        return ((), item)
                    }
                    throw Abort()
                }
            }
            #expect(try await store.firstSighting(registrationID: id, key: "k", at: 2_000, since: 0))
            #expect(try await store.chats(registrationID: id).isEmpty)
            #expect(try await store.nextRetry() == nil)
        }
    }

    /// Only where one process owns the store: PostgreSQL runs it alongside the others (`PushStore`).
    @Test(arguments: StoreKind.sqlite)
    func aBackgroundTransactionRunsBeforeEveryLaterOne(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            store.transactionInBackground(
                { _ = try $0.firstSighting(registrationID: id, key: "k", at: 1_000, since: 0) },
                failed: { Issue.record($0) })
            #expect(try await !store.firstSighting(registrationID: id, key: "k", at: 2_000, since: 0))
        }
    }

    @Test func aBackgroundTransactionOnPostgreSQLCommitsAlongsideTheOthers() async throws {
        try await withStore(.postgresql) { store in
            let id = try await registered(store).id
            store.transactionInBackground(
                { transaction in
                    try transaction.updateChat(registrationID: id, chat: "bob@example.org") { state in
                        state = ChatState(registrationID: id, chat: "bob@example.org", count: 1)
                    }
                }, failed: { Issue.record($0) })
            let deadline = ContinuousClock.now + .seconds(30)
            var chats = try await store.chats(registrationID: id)
            while chats.isEmpty && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                chats = try await store.chats(registrationID: id)
            }
            #expect(chats.map(\.count) == [1])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aBackgroundTransactionsFailureIsReportedAndRolledBack(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let failure = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                store.transactionInBackground(
                    { transaction in
                        _ = try transaction.firstSighting(registrationID: id, key: "k", at: 1_000, since: 0)
                        throw Abort()
                    }, failed: { continuation.resume(returning: $0 is Abort) })
            }
            #expect(failure)
            #expect(try await store.firstSighting(registrationID: id, key: "k", at: 2_000, since: 0))
        }
    }
}
