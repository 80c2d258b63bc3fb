import Store
import Testing

@testable import APush

@Suite struct ChatCoalescerTests {
    /// One step of a chat's life, at a time in seconds, and what the coalescer must say.
    enum Step: Sendable, CustomStringConvertible {
        case message(at: Double, expect: ChatCoalescer.MessageDecision)
        case silenced(at: Double)
        case urgent(at: Double, expect: ChatCoalescer.MessageDecision)
        case windowEnd(at: Double, expectCount: Int?)
        case windowCloses(at: Double)
        case windowNotDue(at: Double)
        case read(at: Double, pushDue: Bool)

        var description: String {
            switch self {
            case .message(let at, let expect): "message@\(at)→\(expect)"
            case .silenced(let at): "silenced@\(at)"
            case .urgent(let at, let expect): "urgent@\(at)→\(expect)"
            case .windowEnd(let at, let count): "windowEnd@\(at)→push \(count.map(String.init) ?? "-")"
            case .windowCloses(let at): "windowCloses@\(at)"
            case .windowNotDue(let at): "windowNotDue@\(at)"
            case .read(let at, let due): "read@\(at)→\(due)"
            }
        }
    }

    static let window: Timestamp = 10_000

    static func ms(_ seconds: Double) -> Timestamp { Timestamp(seconds * 1000) }

    static func notice(_ at: Double) -> HeldNotice {
        HeldNotice(from: "bob@localhost", id: "id@\(at)", groupchat: false, mention: false, at: ms(at))
    }

    /// Runs the steps as the service would, keeping the state between them.
    @discardableResult
    static func run(_ steps: [Step], readsVisible: Bool = true) -> ChatState? {
        var state: ChatState?
        for step in steps {
            switch step {
            case .message(let at, let expected), .urgent(let at, let expected):
                var urgent = false
                if case .urgent = step { urgent = true }
                let decision = ChatCoalescer.message(
                    &state, registrationID: 1, chat: "bob@localhost", notice: notice(at),
                    now: ms(at), window: window, readsVisible: readsVisible,
                    silenced: false, urgent: urgent)
                #expect(decision == expected, "\(step)")
            case .silenced(let at):
                let decision = ChatCoalescer.message(
                    &state, registrationID: 1, chat: "bob@localhost", notice: notice(at),
                    now: ms(at), window: window, readsVisible: readsVisible,
                    silenced: true)
                #expect(decision == .silence, "\(step)")
            case .windowEnd(let at, let count):
                let decision = ChatCoalescer.windowEnded(&state, now: ms(at))
                if let count {
                    guard case .push(_, let pushed) = decision else {
                        Issue.record("\(step): \(decision)")
                        continue
                    }
                    #expect(pushed == count, "\(step)")
                } else {
                    #expect(decision == .close, "\(step)")
                }
            case .windowCloses(let at):
                #expect(ChatCoalescer.windowEnded(&state, now: ms(at)) == .close, "\(step)")
            case .windowNotDue(let at):
                #expect(ChatCoalescer.windowEnded(&state, now: ms(at)) == .notDue, "\(step)")
            case .read(let at, let due):
                #expect(ChatCoalescer.read(&state, now: ms(at), window: window) == due, "\(step)")
            }
        }
        return state
    }

    @Test(arguments: [
        // A burst of 5: one push at once, one with the count at the window's end, then a quiet window closes it.
        [
            Step.message(at: 0, expect: .push(count: 1)), .message(at: 1, expect: .hold),
            .message(at: 2, expect: .hold),
            .message(at: 3, expect: .hold), .message(at: 4, expect: .hold), .windowNotDue(at: 9.9),
            .windowEnd(at: 10, expectCount: 5), .windowCloses(at: 20), .message(at: 25, expect: .push(count: 6)),
        ],
        // The window reopens after a held push: messages within it are held again.
        [
            .message(at: 0, expect: .push(count: 1)), .message(at: 5, expect: .hold),
            .windowEnd(at: 10, expectCount: 2),
            .message(at: 15, expect: .hold), .windowEnd(at: 20, expectCount: 3), .windowCloses(at: 30),
        ],
        // A read resets the count and cancels the held push; the read push is due once.
        [
            .message(at: 0, expect: .push(count: 1)), .message(at: 1, expect: .hold), .read(at: 2, pushDue: true),
            .windowNotDue(at: 10), .message(at: 11, expect: .push(count: 1)),
        ],
        // At most one read push per window, and only after a notice since the last read.
        [
            .message(at: 0, expect: .push(count: 1)), .read(at: 1, pushDue: true), .read(at: 2, pushDue: false),
            .message(at: 3, expect: .push(count: 1)), .read(at: 4, pushDue: false),
            .message(at: 12, expect: .push(count: 1)),
            .read(at: 12, pushDue: true),
        ],
        // A read with nothing noticed since is no push.
        [.read(at: 0, pushDue: false), .silenced(at: 1), .read(at: 2, pushDue: false)],
        // Silenced messages count but open no window.
        [
            .silenced(at: 0), .silenced(at: 1), .message(at: 2, expect: .push(count: 3)), .silenced(at: 3),
            .windowEnd(at: 12, expectCount: nil),
        ],
        // An urgent notice (a missed call) bypasses an open window.
        [
            .message(at: 0, expect: .push(count: 1)), .urgent(at: 1, expect: .push(count: 2)),
            .message(at: 5, expect: .hold), .windowNotDue(at: 10), .windowEnd(at: 11, expectCount: 3),
        ],
    ])
    func followsTheCoalescingRules(_ steps: [Step]) {
        Self.run(steps)
    }

    @Test func theHeldNoticeIsTheLatest() {
        var state: ChatState?
        for at in [0.0, 1, 2] {
            _ = ChatCoalescer.message(
                &state, registrationID: 1, chat: "c", notice: Self.notice(at), now: Self.ms(at),
                window: Self.window, readsVisible: true, silenced: false)
        }
        #expect(ChatCoalescer.windowEnded(&state, now: Self.ms(10)) == .push(Self.notice(2), count: 3))
    }

    @Test func withoutReadsTheCountRestartsAfterAQuietHour() {
        let state = Self.run(
            [
                .message(at: 0, expect: .push(count: 1)), .message(at: 20, expect: .push(count: 2)),
                .message(at: 20 + 3599, expect: .push(count: 3)),
                .message(at: 20 + 3599 + 3600, expect: .push(count: 1)),
            ],
            readsVisible: false)
        #expect(state?.count == 1)
    }

    @Test func withReadsTheCountNeverRestartsByItself() {
        Self.run([.message(at: 0, expect: .push(count: 1)), .message(at: 7200, expect: .push(count: 2))])
    }

    @Test func aReadOfAnUnknownChatLeavesNoState() {
        var state: ChatState?
        #expect(!ChatCoalescer.read(&state, now: 0, window: Self.window))
        #expect(state == nil)
    }

    @Test func theStateRemembersTheWindowLength() {
        var state: ChatState?
        _ = ChatCoalescer.message(
            &state, registrationID: 7, chat: "c", notice: Self.notice(0), now: 0, window: 3000,
            readsVisible: true, silenced: false)
        #expect(state?.registrationID == 7)
        #expect(state?.windowEndsAt == 3000)
        #expect(state?.windowMilliseconds == 3000)
        #expect(state?.noticedSinceRead == true)
    }

    /// Issue 20, item 4: M1 is pushed (count 1) and waits for a retry; the chat is read (count 0) and M2
    /// comes (count 1 again). The count says M1 is current; the generation, which only grows, says not.
    @Test func aStoredMessagePushIsStaleOnceItsChatDecidedAnythingElseEvenWhenTheCountCameBack() {
        var state: ChatState?
        _ = ChatCoalescer.message(
            &state, registrationID: 1, chat: "bob@localhost", notice: Self.notice(0), now: 0,
            window: Self.window, readsVisible: true, silenced: false)
        let m1 = state?.generation ?? 0
        #expect(ChatCoalescer.isCurrent(generation: m1, in: state))
        _ = ChatCoalescer.read(&state, now: Self.ms(1), window: Self.window)
        #expect(!ChatCoalescer.isCurrent(generation: m1, in: state), "a read since")
        let decision = ChatCoalescer.message(
            &state, registrationID: 1, chat: "bob@localhost", notice: Self.notice(2), now: Self.ms(2),
            window: Self.window, readsVisible: true, silenced: false)
        #expect(decision == .push(count: 1), "the count came back to M1's")
        let m2 = state?.generation ?? 0
        #expect(m2 > m1)
        #expect(!ChatCoalescer.isCurrent(generation: m1, in: state), "M1's retry would overwrite M2")
        #expect(ChatCoalescer.isCurrent(generation: m2, in: state))
    }

    @Test func everyDecisionOnAChatMovesItsGenerationOnAndAQuietWindowEndDoesNot() {
        var state: ChatState?
        var seen: [Int64] = []
        let record = { (state: ChatState?) in seen.append(state?.generation ?? -1) }
        _ = ChatCoalescer.message(
            &state, registrationID: 1, chat: "c", notice: Self.notice(0), now: 0, window: Self.window,
            readsVisible: true, silenced: false)
        record(state)
        _ = ChatCoalescer.message(
            &state, registrationID: 1, chat: "c", notice: Self.notice(1), now: Self.ms(1), window: Self.window,
            readsVisible: true, silenced: false)
        record(state)  // held
        _ = ChatCoalescer.windowEnded(&state, now: Self.ms(10))
        record(state)  // the held notice's follow-up
        _ = ChatCoalescer.message(
            &state, registrationID: 1, chat: "c", notice: Self.notice(11), now: Self.ms(11), window: Self.window,
            readsVisible: true, silenced: true)
        record(state)  // silenced: the count moved
        _ = ChatCoalescer.windowEnded(&state, now: Self.ms(20))
        record(state)  // nothing held: the window closes, nothing decided
        _ = ChatCoalescer.read(&state, now: Self.ms(21), window: Self.window)
        record(state)
        #expect(seen == [1, 2, 3, 4, 4, 5])
    }

    @Test func aStoredMessagePushOfAForgottenChatGoesAndOneOfItsEarlierLifeDoesNot() {
        #expect(ChatCoalescer.isCurrent(generation: 1, in: nil), "a forgotten chat cannot tell")
        // Its earlier life decided one push at 0 (generation 1); forgotten, it begins again at 5 s.
        var state: ChatState?
        _ = ChatCoalescer.message(
            &state, registrationID: 1, chat: "bob@localhost", notice: Self.notice(5), now: Self.ms(5),
            window: Self.window, readsVisible: true, silenced: false)
        #expect(!ChatCoalescer.isCurrent(generation: 1, in: state), "a push of the chat's earlier life")
        #expect(ChatCoalescer.isCurrent(generation: state?.generation ?? 0, in: state))
    }
}
