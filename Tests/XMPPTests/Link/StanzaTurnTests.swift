import Synchronization
import Testing

@testable import XMPP

@Suite(.timeLimit(.minutes(1)))
struct StanzaTurnTests {
    /// Records what happens, in order.
    private final class Events: Sendable {
        private let events = Mutex<[String]>([])
        func add(_ event: String) { events.withLock { $0.append(event) } }
        var all: [String] { events.withLock { $0 } }
    }

    @Test func aTurnWaitsUntilTheOneBeforeItEnds() async throws {
        var turns = StanzaTurns(limit: 16)
        let first = turns.turn(for: "node-1")
        let second = turns.turn(for: "node-1")
        let events = Events()
        let waiting = Task {
            await second.wait()
            events.add("second decides")
        }
        try await Task.sleep(for: .milliseconds(100))
        events.add("first decides")
        first.end()
        await waiting.value
        #expect(events.all == ["first decides", "second decides"])
    }

    @Test func turnsOfOtherKeysDoNotWait() async {
        var turns = StanzaTurns(limit: 16)
        _ = turns.turn(for: "node-1")
        await turns.turn(for: "node-2").wait()  // returns at once, though node-1's turn has not ended
    }

    /// A turn ended before the one it follows (its handler failed before it came to wait) lets the
    /// next one go only once every turn before has ended.
    @Test func aTurnWaitsForEveryTurnBeforeIt() async throws {
        var turns = StanzaTurns(limit: 16)
        let first = turns.turn(for: "node-1")
        let second = turns.turn(for: "node-1")
        let third = turns.turn(for: "node-1")
        second.end()
        let events = Events()
        let waiting = Task {
            await third.wait()
            events.add("third decides")
        }
        try await Task.sleep(for: .milliseconds(100))
        events.add("first ends")
        first.end()
        await waiting.value
        #expect(events.all == ["first ends", "third decides"])
    }

    @Test func aTurnAfterEndedOnesGoesAtOnce() async {
        var turns = StanzaTurns(limit: 16)
        turns.turn(for: "node-1").end()
        let second = turns.turn(for: "node-1")
        second.end()
        second.end()
        await turns.turn(for: "node-1").wait()
    }

    /// One key per node ever seen would grow without end: ended turns are forgotten past the limit.
    @Test func theKeysKeptAreBoundedByTheTurnsNotEnded() {
        var turns = StanzaTurns(limit: 64)
        var open: [StanzaTurn] = []
        for index in 0..<10_000 {
            let turn = turns.turn(for: "node-\(index)")
            if index % 1000 == 0 { open.append(turn) } else { turn.end() }
        }
        #expect(turns.count <= 64)
    }
}
