import Dispatch
import Glibc
import Synchronization
import Testing

@testable import BlockingWork

@Suite struct BlockingWorkTests {
    private struct Failed: Error {}

    private final class Started: Sendable {
        let count = Mutex(0)
    }

    @Test func returnsWhatTheWorkReturnsOrThrows() async throws {
        #expect(await BlockingWork.run { 6 * 7 } == 42)
        await #expect(throws: Failed.self) { try await BlockingWork.run { () throws -> Int in throw Failed() } }
    }

    /// Sixteen calls that each block until all sixteen have started, or give up after 5 s: on a pool of
    /// a thread per core they would wait for threads to be added far longer (eight took 5 s on
    /// Dispatch's global queue on two cores); here each has a thread at once.
    @Test func callsThatBlockEachHaveAThreadAtOnce() async {
        let calls = 16
        let started = Started()
        let begun = ContinuousClock.now
        let allStarted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<calls {
                group.addTask {
                    await BlockingWork.run {
                        started.count.withLock { $0 += 1 }
                        while ContinuousClock.now - begun < .seconds(5) {
                            if started.count.withLock({ $0 }) == calls { return true }
                            usleep(1000)
                        }
                        return false
                    }
                }
            }
            return await group.allSatisfy { $0 }
        }
        #expect(allStarted, "blocked calls waited for threads")
    }

    @Test func startedWorkRuns() async throws {
        let ran = DispatchSemaphore(value: 0)
        BlockingWork.start { ran.signal() }
        while ran.wait(timeout: .now()) != .success { try await Task.sleep(for: .milliseconds(5)) }
    }
}
