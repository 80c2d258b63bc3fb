import Store

/// The App Server's final answers (taken or rejected) that the store could not record, kept in memory
/// until it is back. While one is kept, its outbox item is not sent again: the App Server has answered
/// it. Bounded: past `capacity` the oldest goes, and its push may go again when its lease ends.
struct UnrecordedAnswers: Sendable {
    struct Answer: Sendable, Equatable {
        let registrationID: Int64
        /// The push's outbox item, which recording the answer removes; nil for a push sent without one.
        let itemID: Int64?
        /// Why the App Server rejected it; nil when it took it.
        let error: String?
        let at: Timestamp
    }

    let capacity: Int
    /// Oldest first.
    private(set) var answers: [Answer] = []

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Keeps `answer`; returns the oldest, dropped to make room, if the list was full.
    mutating func keep(_ answer: Answer) -> Answer? {
        answers.append(answer)
        return answers.count > capacity ? answers.removeFirst() : nil
    }

    /// `answer` is recorded: it is no longer kept.
    mutating func recorded(_ answer: Answer) {
        if let index = answers.firstIndex(of: answer) { answers.remove(at: index) }
    }

    /// Whether the answer to outbox item `itemID` waits here to be recorded.
    func holds(itemID: Int64) -> Bool {
        answers.contains { $0.itemID == itemID }
    }
}
