import Testing
import XMPP

@Suite struct BackoffTests {
    @Test func withoutJitterDelaysDoubleFromTheInitialValue() {
        let backoff = Backoff(initial: .milliseconds(50), multiplier: 2, maximum: .seconds(1), jitter: 0.2)
        // unit 0.5 is the middle of the jitter range: no spread.
        let delays = (1...5).map { backoff.delay(attempt: $0, unit: 0.5) }
        #expect(
            delays == [
                .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(400),
                .milliseconds(800),
            ])
    }

    @Test func theDefaultIsCappedAtOneSecondEvenWithJitter() {
        let backoff = Backoff()
        #expect(backoff.maximum == .seconds(1))
        for attempt in [6, 10, 100, 10_000] {
            #expect(backoff.delay(attempt: attempt, unit: 0.5) == .seconds(1))
            #expect(backoff.delay(attempt: attempt, unit: 0.999) == .seconds(1))
        }
        #expect(backoff.delay(attempt: 100, unit: 0) == .milliseconds(800))
    }

    @Test(arguments: [1, 2, 3, 4])
    func jitterStaysWithinItsFraction(attempt: Int) {
        let backoff = Backoff(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(10), jitter: 0.2)
        let base = backoff.delay(attempt: attempt, unit: 0.5)
        let low = backoff.delay(attempt: attempt, unit: 0)
        let high = backoff.delay(attempt: attempt, unit: 0.999_999)
        #expect(nearly(low, base * 0.8))
        #expect(nearly(high, base * 1.2))
        for _ in 0..<100 {
            let random = backoff.delay(attempt: attempt)
            #expect(random >= low && random <= high)
        }
    }

    @Test func attemptZeroOrBelowCountsAsTheFirst() {
        let backoff = Backoff(jitter: 0)
        #expect(backoff.delay(attempt: 0) == backoff.delay(attempt: 1))
        #expect(backoff.delay(attempt: -3) == .milliseconds(50))
    }

    @Test func afterARejectionTheWaitIsFarLonger() {
        let rejection = Backoff.afterRejection
        let normal = Backoff()
        #expect(nearly(rejection.delay(attempt: 1, unit: 0), .seconds(4)))
        #expect(rejection.delay(attempt: 1, unit: 0) > normal.delay(attempt: 100, unit: 0.999) * 3)
        #expect(rejection.delay(attempt: 20, unit: 0.5) == .seconds(300))
    }

    /// `reconnect.maxMs` is the operator's: a cap past Int64 nanoseconds (292 years) must not trap.
    @Test func aHugeMaximumIsReachedWithoutOverflow() {
        let backoff = Backoff(initial: .seconds(1), maximum: .milliseconds(10_000_000_000_000), jitter: 0)
        #expect(backoff.delay(attempt: 100) == .milliseconds(10_000_000_000_000))
    }

    /// Equal to within a microsecond: the delays are computed in floating point.
    private func nearly(_ a: Duration, _ b: Duration) -> Bool {
        abs((a - b) / .microseconds(1)) < 1
    }
}
