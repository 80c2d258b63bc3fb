import Store
import Testing

@testable import APush

/// Grace's decisions (Grace, and the chat's window it holds a notice in: ChatCoalescer), without
/// sockets or clocks: times are seconds.
@Suite struct GraceTests {
    static func ms(_ seconds: Double) -> Timestamp { Timestamp(seconds * 1000) }

    static func policy(seconds: Int = 5, when: PushPolicy.GraceWhen = .active, mentions: Bool = true) -> PushPolicy {
        var policy = PushPolicy()
        policy.graceSeconds = seconds
        policy.graceWhen = when
        policy.graceMentions = mentions
        return policy
    }

    static func grace(
        _ policy: PushPolicy = Self.policy(), activeAt: Double? = nil, connected: Bool = false, now: Double
    ) -> Grace {
        Grace.of(policy, lastActivity: activeAt.map(ms), connectedElsewhere: connected, now: ms(now))
    }

    static func notice(_ at: Double, groupchat: Bool = false, mention: Bool = false) -> HeldNotice {
        HeldNotice(from: "bob@localhost", id: "id@\(at)", groupchat: groupchat, mention: mention, at: ms(at))
    }

    static func message(
        _ state: inout ChatState?, at: Double, grace: Grace, urgent: Bool = false, groupchat: Bool = false,
        mention: Bool = false
    ) -> ChatCoalescer.MessageDecision {
        ChatCoalescer.message(
            &state, registrationID: 1, chat: "bob@localhost",
            notice: notice(at, groupchat: groupchat, mention: mention), now: ms(at), window: 10_000,
            readsVisible: true, silenced: false, urgent: urgent, grace: grace)
    }

    // MARK: When grace holds

    @Test func activityElsewhereHoldsUntilAGraceAfterIt() {
        #expect(Self.grace(activeAt: 10, now: 12).endsAt == Self.ms(15))
        #expect(Self.grace(activeAt: 10, now: 14.999).endsAt == Self.ms(15))
        #expect(Self.grace(activeAt: 10, now: 15).endsAt == nil, "the grace is over")
        #expect(Self.grace(activeAt: 10, now: 60).endsAt == nil)
    }

    @Test func anAccountNothingIsKnownOfIsHeldByNothing() {
        // Never seen, forgotten at a restart or a lost link: the push goes as without grace.
        #expect(Self.grace(now: 12) == Grace(endsAt: nil, holdsMentions: true))
        #expect(Self.grace(Self.policy(when: .connected), now: 12).endsAt == nil)
    }

    @Test func graceOffHoldsNothingWhateverTheActivity() {
        #expect(Self.grace(Self.policy(seconds: 0), activeAt: 10, now: 11) == .none)
        #expect(Self.grace(Self.policy(seconds: 0, when: .connected), activeAt: 10, connected: true, now: 11) == .none)
    }

    @Test func connectedHoldsWhileAnotherSessionIsAvailableAndIsJudgedAgainAGraceLater() {
        let connected = Self.policy(when: .connected)
        #expect(Self.grace(connected, connected: true, now: 100).endsAt == Self.ms(105))
        #expect(Self.grace(connected, activeAt: 99, connected: true, now: 100).endsAt == Self.ms(105))
        #expect(Self.grace(connected, activeAt: 99, now: 100).endsAt == Self.ms(104), "active still holds")
        #expect(Self.grace(connected, now: 100).endsAt == nil, "away and silent: the push goes")
        // With grace-when active, a session that is only connected holds nothing.
        #expect(Self.grace(connected: true, now: 100).endsAt == nil)
    }

    @Test func anActivityStampedLaterThanNowHoldsNoLongerThanOneNow() {
        #expect(Self.grace(activeAt: 500, now: 100).endsAt == Self.ms(105))
    }

    @Test func aMentionIsHeldOnlyIfThePolicySays() {
        let mention = Self.notice(11, groupchat: true, mention: true)
        #expect(Self.grace(activeAt: 10, now: 11).end(holding: mention, now: Self.ms(11)) == Self.ms(15))
        let notHeld = Self.grace(Self.policy(mentions: false), activeAt: 10, now: 11)
        #expect(notHeld.end(holding: mention, now: Self.ms(11)) == nil)
        // Any other group chat message is held still.
        #expect(notHeld.end(holding: Self.notice(11, groupchat: true), now: Self.ms(11)) == Self.ms(15))
    }

    // MARK: The chat's window

    @Test func aMessageDuringGraceIsHeldInAWindowEndingWithTheGrace() {
        var state: ChatState?
        let grace = Self.grace(activeAt: 10, now: 11)
        #expect(Self.message(&state, at: 11, grace: grace) == .hold)
        #expect(state?.windowEndsAt == Self.ms(15))
        #expect(state?.held?.id == "id@11.0")
        #expect(state?.noticedSinceRead == false, "the phone has shown nothing")
        #expect(Self.message(&state, at: 12, grace: Self.grace(activeAt: 10, now: 12)) == .hold)
        #expect(state?.count == 2)
    }

    @Test func withoutGraceTheSameMessageIsPushedAtOnce() {
        var state: ChatState?
        #expect(Self.message(&state, at: 11, grace: Self.grace(now: 11)) == .push(count: 1))
        #expect(Self.message(&state, at: 12, grace: .none) == .hold, "then coalesced as before")
    }

    @Test func graceHoldsPastAnOpenCoalescingWindowAndNeverShortensOne() {
        var state: ChatState?
        #expect(Self.message(&state, at: 0, grace: .none) == .push(count: 1))  // window to 10
        #expect(Self.message(&state, at: 2, grace: Self.grace(activeAt: 1, now: 2)) == .hold)
        #expect(state?.windowEndsAt == Self.ms(10), "the window ends later than the grace (6)")
        #expect(Self.message(&state, at: 9, grace: Self.grace(activeAt: 8, now: 9)) == .hold)
        #expect(state?.windowEndsAt == Self.ms(13))
    }

    @Test func whenTheGraceEndsOnePushGoesWithTheLatestCount() {
        var state: ChatState?
        for at in [11.0, 12, 13] {
            _ = Self.message(&state, at: at, grace: Self.grace(activeAt: 10, now: at))
        }
        #expect(ChatCoalescer.windowEnded(&state, now: Self.ms(14), grace: .none) == .notDue)
        let ended = ChatCoalescer.windowEnded(&state, now: Self.ms(15), grace: Self.grace(activeAt: 10, now: 15))
        #expect(ended == .push(Self.notice(13), count: 3))
        #expect(state?.windowEndsAt == Self.ms(25), "a coalescing window follows, as after any held push")
        #expect(state?.noticedSinceRead == true)
    }

    @Test func newActivityMovesTheWindowsEndToAGraceAfterIt() {
        var state: ChatState?
        _ = Self.message(&state, at: 11, grace: Self.grace(activeAt: 10, now: 11))
        let generation = state?.generation
        // Active again at 14: at 15 the grace holds until 19, a time to come, so the loop sleeps until it.
        let moved = ChatCoalescer.windowEnded(&state, now: Self.ms(15), grace: Self.grace(activeAt: 14, now: 15))
        #expect(moved == .graceHolds(until: Self.ms(19)))
        #expect(state?.windowEndsAt == Self.ms(19))
        #expect(state?.held == Self.notice(11), "still held")
        #expect(state?.generation == generation, "nothing was decided")
        #expect(ChatCoalescer.windowEnded(&state, now: Self.ms(18), grace: .none) == .notDue)
        // Silent since: at 19 the push goes.
        let ended = ChatCoalescer.windowEnded(&state, now: Self.ms(19), grace: Self.grace(activeAt: 14, now: 19))
        #expect(ended == .push(Self.notice(11), count: 1))
    }

    @Test func aReadDuringGraceCancelsTheHeldPushAndSendsNoReadPush() {
        var state: ChatState?
        _ = Self.message(&state, at: 11, grace: Self.grace(activeAt: 10, now: 11))
        _ = Self.message(&state, at: 12, grace: Self.grace(activeAt: 10, now: 12))
        #expect(!ChatCoalescer.read(&state, now: Self.ms(13), window: 10_000), "the phone showed nothing")
        #expect(state?.held == nil)
        #expect(state?.windowEndsAt == nil)
        #expect(state?.count == 0)
        #expect(ChatCoalescer.windowEnded(&state, now: Self.ms(15), grace: .none) == .notDue)
    }

    @Test func aReadDuringGraceStillWithdrawsANoticeShownBeforeIt() {
        var state: ChatState?
        #expect(Self.message(&state, at: 0, grace: .none) == .push(count: 1))
        _ = Self.message(&state, at: 30, grace: Self.grace(activeAt: 29, now: 30))
        #expect(ChatCoalescer.read(&state, now: Self.ms(31), window: 10_000), "the notice of 0 is withdrawn")
    }

    @Test func aMissedCallDuringGraceGoesAtOnce() {
        // It follows a call that rang on the phone: held, the phone would not learn that it is over.
        var state: ChatState?
        let grace = Self.grace(activeAt: 10, now: 11)
        #expect(Self.message(&state, at: 11, grace: grace, urgent: true) == .push(count: 1))
        #expect(Self.message(&state, at: 12, grace: grace) == .hold)
    }

    @Test func aMentionWithGraceMentionsOffGoesAtOnce() {
        var state: ChatState?
        let grace = Self.grace(Self.policy(mentions: false), activeAt: 10, now: 11)
        #expect(Self.message(&state, at: 11, grace: grace, groupchat: true, mention: true) == .push(count: 1))
        var other: ChatState?
        #expect(Self.message(&other, at: 11, grace: grace, groupchat: true) == .hold)
    }

    @Test func aMentionGraceLetsThroughIsNotHeldByTheGracesWindow() {
        let grace = Self.grace(Self.policy(mentions: false), activeAt: 10, now: 11)
        var state: ChatState?
        #expect(Self.message(&state, at: 11, grace: grace, groupchat: true) == .hold)
        // Nothing shown since the last read: the window is grace's alone, and the mention goes now.
        #expect(Self.message(&state, at: 12, grace: grace, groupchat: true, mention: true) == .push(count: 2))
        #expect(state?.windowEndsAt == Self.ms(22), "a coalescing window follows")
    }

    @Test func aNoticeGraceDoesNotHoldWaitsNoLongerThanAWindowFromNow() {
        var state: ChatState?
        #expect(Self.message(&state, at: 0, grace: .none) == .push(count: 1))  // window to 10
        _ = Self.message(&state, at: 2, grace: Self.grace(Self.policy(seconds: 60), activeAt: 1, now: 2))
        #expect(state?.windowEndsAt == Self.ms(61), "moved on by grace")
        // The grace is over (the policy turned it off): the next notice waits for a window from now.
        #expect(Self.message(&state, at: 3, grace: .none) == .hold)
        #expect(state?.windowEndsAt == Self.ms(13))
        // A plain coalescing window is left as it is.
        var plain: ChatState?
        _ = Self.message(&plain, at: 0, grace: .none)
        _ = Self.message(&plain, at: 5, grace: .none)
        #expect(plain?.windowEndsAt == Self.ms(10))
    }

    @Test func aHeldMentionIsNotHeldOnOnceThePolicyNoLongerHoldsMentions() {
        var state: ChatState?
        _ = Self.message(&state, at: 11, grace: Self.grace(activeAt: 10, now: 11), groupchat: true, mention: true)
        let ended = ChatCoalescer.windowEnded(
            &state, now: Self.ms(15), grace: Self.grace(Self.policy(mentions: false), activeAt: 14, now: 15))
        #expect(ended == .push(Self.notice(11, groupchat: true, mention: true), count: 1))
    }

    @Test func aRestartDuringGraceForgetsTheSessionsAndThePushGoesAtTheWindowsEnd() {
        var state: ChatState?
        _ = Self.message(&state, at: 11, grace: Self.grace(activeAt: 10, now: 11))
        // What the store kept; the new process knows nothing of the account's other sessions.
        var stored = state
        let forgotten = Self.grace(activeAt: nil, now: 15)
        #expect(
            ChatCoalescer.windowEnded(&stored, now: Self.ms(15), grace: forgotten) == .push(Self.notice(11), count: 1))
    }
}
