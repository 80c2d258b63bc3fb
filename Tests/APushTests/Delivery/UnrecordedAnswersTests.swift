import Testing

@testable import APush

struct UnrecordedAnswersTests {
    func answer(_ itemID: Int64?, at: Int64 = 0) -> UnrecordedAnswers.Answer {
        UnrecordedAnswers.Answer(registrationID: 1, itemID: itemID, error: nil, at: at)
    }

    @Test func keepsAnswersOldestFirstAndKnowsTheirItems() {
        var answers = UnrecordedAnswers(capacity: 3)
        #expect(answers.keep(answer(1)) == nil)
        #expect(answers.keep(answer(nil)) == nil)
        #expect(answers.holds(itemID: 1))
        #expect(!answers.holds(itemID: 2))
        #expect(answers.answers == [answer(1), answer(nil)])
    }

    @Test func pastItsCapacityTheOldestIsDropped() {
        var answers = UnrecordedAnswers(capacity: 2)
        _ = answers.keep(answer(1))
        _ = answers.keep(answer(2))
        #expect(answers.keep(answer(3)) == answer(1))
        #expect(answers.answers == [answer(2), answer(3)])
        #expect(!answers.holds(itemID: 1), "its push may go again when its lease ends")
    }

    @Test func aRecordedAnswerIsNoLongerKept() {
        var answers = UnrecordedAnswers(capacity: 2)
        _ = answers.keep(answer(1))
        _ = answers.keep(answer(2))
        answers.recorded(answer(1))
        #expect(answers.answers == [answer(2)])
        #expect(!answers.holds(itemID: 1))
        answers.recorded(answer(7))
        #expect(answers.answers == [answer(2)], "an answer not kept changes nothing")
    }
}
