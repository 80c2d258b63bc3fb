import Dispatch
import Testing

@testable import Store

/// A tiny store: an actor on its own queue owning a non-Sendable `Database`.
private actor Counter {
    nonisolated let queue: DispatchQueue
    nonisolated let executor: DispatchQueueExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let database: Database

    init(queue: DispatchQueue) throws {
        self.queue = queue
        executor = DispatchQueueExecutor(queue: queue)
        database = try Database(.memory)
        try database.executeScript("CREATE TABLE counter(value INTEGER NOT NULL); INSERT INTO counter VALUES (0);")
    }

    /// A read followed by a write: interleaved callers would lose updates.
    func increment() throws -> Int64 {
        dispatchPrecondition(condition: .onQueue(queue))
        return try database.transaction { database in
            let value = try database.query("SELECT value FROM counter")[0].int("value") ?? 0
            try database.execute("UPDATE counter SET value = ?", [.integer(value + 1)])
            return value + 1
        }
    }

    func value() throws -> Int64? {
        try database.query("SELECT value FROM counter").first?.int("value")
    }
}

@Suite struct DispatchQueueExecutorTests {
    @Test func concurrentCallersAreSerialized() async throws {
        let counter = try Counter(queue: DispatchQueue(label: "test.counter"))
        let results = try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<200 {
                group.addTask { try await counter.increment() }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.sorted() == Array(1...200))
        #expect(try await counter.value() == 200)
    }

    @Test func codeOnTheQueueMayAssumeTheActorsIsolation() throws {
        let queue = DispatchQueue(label: "test.assume")
        let counter = try Counter(queue: queue)
        let value = try queue.sync {
            try counter.assumeIsolated { try $0.increment() }
        }
        #expect(value == 1)
    }
}
