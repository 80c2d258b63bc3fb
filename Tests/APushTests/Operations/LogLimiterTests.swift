import Store
import Testing

@testable import APush

@Suite struct LogLimiterTests {
    /// Asks the limiter about each (key, time) in turn; returns its answers.
    static func ask(_ limiter: inout LogLimiter, _ calls: [(String, Timestamp)]) -> [Bool] {
        calls.map { limiter.allows($0.0, at: $0.1) }
    }

    @Test func aKeyIsLoggedOncePerInterval() {
        var limiter = LogLimiter(interval: 60_000, capacity: 8)
        let answers = Self.ask(
            &limiter,
            [
                ("forbidden", 0), ("forbidden", 1), ("forbidden", 59_999),
                ("forbidden", 60_000), ("forbidden", 60_001),
            ])
        #expect(answers == [true, false, false, true, false])
    }

    @Test func eachKeyHasItsOwnInterval() {
        var limiter = LogLimiter(interval: 60_000, capacity: 8)
        let answers = Self.ask(&limiter, [("forbidden", 0), ("not-allowed", 1), ("forbidden", 2)])
        #expect(answers == [true, true, false])
    }

    /// Keys come from the App Server's answers: past the capacity a new key is not logged (nor
    /// remembered) until an older one's interval has passed, so the limiter never grows.
    @Test func itRemembersAtMostItsCapacity() {
        var limiter = LogLimiter(interval: 60_000, capacity: 2)
        #expect(Self.ask(&limiter, [("a", 0), ("b", 0), ("c", 1)]) == [true, true, false])
        #expect(limiter.remembered == 2)
        #expect(Self.ask(&limiter, [("c", 60_000)]) == [true])
        #expect(limiter.remembered == 1)
    }
}
