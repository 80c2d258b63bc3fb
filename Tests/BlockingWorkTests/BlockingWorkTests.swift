import Dispatch
import Glibc
import Synchronization
import Testing

@testable import BlockingWork

@Suite struct BlockingWorkTests {
    private struct Failed: Error {}

    private final class Barrier: Sendable {
        let begun = Mutex(0)
        let outcomes = Mutex<[Bool]>([])
    }

    @Test func returnsWhatTheWorkReturnsOrThrows() async throws {
        #expect(await BlockingWork.run { 6 * 7 } == 42)
        await #expect(throws: Failed.self) { try await BlockingWork.run { () throws -> Int in throw Failed() } }
    }

    /// Sixteen calls started at once that each block until all sixteen have begun, or give up after
    /// 5 s: on a pool of a thread per core they would wait for threads to be added far longer (eight
    /// took 5 s on Dispatch's global queue on two cores); here each has a thread at once.
    @Test func callsThatBlockEachHaveAThreadAtOnce() async throws {
        let calls = 16
        let state = Barrier()
        for _ in 0..<calls {
            BlockingWork.start {
                let begun = ContinuousClock.now
                state.begun.withLock { $0 += 1 }
                var allBegun = false
                while !allBegun, ContinuousClock.now - begun < .seconds(5) {
                    allBegun = state.begun.withLock { $0 } == calls
                    if !allBegun { usleep(1000) }
                }
                state.outcomes.withLock { $0.append(allBegun) }
            }
        }
        while state.outcomes.withLock({ $0.count }) < calls { try await Task.sleep(for: .milliseconds(10)) }
        #expect(state.outcomes.withLock { $0.allSatisfy { $0 } }, "blocked calls waited for threads")
    }

    @Test func startedWorkRuns() async throws {
        let ran = DispatchSemaphore(value: 0)
        BlockingWork.start { ran.signal() }
        while ran.wait(timeout: .now()) != .success { try await Task.sleep(for: .milliseconds(5)) }
    }
}
