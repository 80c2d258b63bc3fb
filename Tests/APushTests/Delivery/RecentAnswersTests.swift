import Testing

@testable import APush

@Suite struct RecentAnswersTests {
    private let start = ContinuousClock.now

    @Test func anAnswerIsKeptWhileItsAskerMayWait() {
        var recent = RecentAnswers(capacity: 4, keptFor: .seconds(25))
        recent.keep("a", at: start)
        recent.keep("b", at: start + .seconds(10))
        #expect(recent.current(at: start + .seconds(24)) == ["a", "b"])
        #expect(recent.current(at: start + .seconds(25)) == ["b"])
        #expect(recent.current(at: start + .seconds(35)).isEmpty)
    }

    @Test func pastItsCapacityTheOldestGoes() {
        var recent = RecentAnswers(capacity: 2, keptFor: .seconds(25))
        for (index, message) in ["a", "b", "c"].enumerated() {
            recent.keep(message, at: start + .milliseconds(index))
        }
        #expect(recent.current(at: start + .seconds(1)) == ["b", "c"])
    }

    @Test func aCapacityBelowOneKeepsOne() {
        var recent = RecentAnswers(capacity: 0, keptFor: .seconds(1))
        recent.keep("a", at: start)
        recent.keep("b", at: start)
        #expect(recent.current(at: start) == ["b"])
    }
}
