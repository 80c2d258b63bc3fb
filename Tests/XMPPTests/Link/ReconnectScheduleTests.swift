import Testing
import XMPP

@Suite struct ReconnectScheduleTests {
    private func schedule() -> ReconnectSchedule {
        ReconnectSchedule(backoff: Backoff(), rejectionBackoff: .afterRejection, standbyBackoff: .standby)
    }

    private let conflict = ComponentStreamFailure.streamError(StreamError(.conflict))

    @Test func aConflictIsRetriedEverySecondForEverAndSaidOnce() {
        var schedule = schedule()
        let first = schedule.ended(conflict, wasReady: false, unit: 0.999)
        #expect(first == .init(delay: .seconds(1), notice: .standingBy))
        #expect(schedule.isStandingBy)
        for _ in 0..<1000 {
            let step = schedule.ended(conflict, wasReady: false, unit: 0.999)
            #expect(step == .init(delay: .seconds(1), notice: .none))
        }
        #expect(schedule.ended(conflict, wasReady: false, unit: 0) == .init(delay: .milliseconds(800), notice: .none))
    }

    @Test func connectingAfterStandingByIsATakeover() {
        var schedule = schedule()
        _ = schedule.ended(conflict, wasReady: false, unit: 0.5)
        let first = schedule.connected()
        #expect(first)
        #expect(!schedule.isStandingBy)
        let second = schedule.connected()
        #expect(!second, "a second connection is no takeover")
        // Losing the link later and meeting a conflict again stands by again, said again.
        #expect(schedule.ended(.connectionLost("reset"), wasReady: true, unit: 0.5).notice == .warning)
        #expect(schedule.ended(conflict, wasReady: false, unit: 0.5).notice == .standingBy)
    }

    @Test func aRefusedSecretStillWaitsOnTheRejectionBackoff() {
        var schedule = schedule()
        let refused = ComponentStreamFailure.streamError(StreamError(.notAuthorized))
        #expect(schedule.ended(refused, wasReady: false, unit: 0.5) == .init(delay: .seconds(5), notice: .error))
        #expect(schedule.ended(refused, wasReady: false, unit: 0.5) == .init(delay: .seconds(10), notice: .error))
    }

    @Test func anOrdinaryLossUsesTheShortBackoffFromItsFirstStep() {
        var schedule = schedule()
        _ = schedule.ended(.connectionLost("refused"), wasReady: false, unit: 0.5)
        let second = schedule.ended(.connectionLost("refused"), wasReady: false, unit: 0.5)
        #expect(second == .init(delay: .milliseconds(100), notice: .warning))
        #expect(schedule.ended(.closedByPeer, wasReady: true, unit: 0.5).delay == .milliseconds(50))
    }

    @Test func aServerLostWhileStandingByEndsTheStandby() {
        var schedule = schedule()
        _ = schedule.ended(conflict, wasReady: false, unit: 0.5)
        #expect(schedule.ended(.connectionLost("refused"), wasReady: false, unit: 0.5).notice == .warning)
        #expect(!schedule.isStandingBy)
    }
}
