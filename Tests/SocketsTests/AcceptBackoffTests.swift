import Testing
import Sockets

@Suite struct AcceptBackoffTests {
    @Test func pausesDoubleFromTenMillisecondsUpToASecond() {
        var backoff = AcceptBackoff()
        let pauses = (0..<10).map { _ in backoff.failed().pauseMicroseconds }
        #expect(pauses == [10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_000_000, 1_000_000, 1_000_000])
    }

    @Test func onlyTheFirstFailureOfARunIsToBeSaid() {
        var backoff = AcceptBackoff()
        let firsts = (0..<3).map { _ in backoff.failed().first }
        #expect(firsts == [true, false, false])
    }

    @Test func aSuccessEndsTheRunAndStartsThePausesOver() {
        var backoff = AcceptBackoff()
        let beforeAnyFailure = backoff.succeeded()
        _ = backoff.failed()
        _ = backoff.failed()
        let endingTheRun = backoff.succeeded()
        let afterIt = backoff.succeeded()
        let next = backoff.failed()
        #expect(!beforeAnyFailure)
        #expect(endingTheRun)
        #expect(!afterIt)
        #expect(next.first)
        #expect(next.pauseMicroseconds == 10_000)
    }
}
