import Testing
import XMPP

@testable import APush

@Suite struct StatisticTests {
    /// The names admin-stats shows: operators and their tools read them, so they never change.
    @Test(arguments: [
        (Statistic.answer(.accepted), "answers.result"),
        (.answer(.gone), "answers.cancel"),
        (.answer(.wait(.resourceConstraint)), "answers.wait"),
        (.refusedPublish(.badRequest), "answers.error.bad-request"),
        (.tombstoneAnswer, "answers.tombstone"),
        (.unknownNodeCancelled, "unknown-node.cancelled"),
        (.unknownNodeCapped, "unknown-node.capped"),
        (.event(.wake), "events.wake"),
        (.deduplicated, "deduplicated"),
        (.coalescedHeld, "coalesced.held"),
        (.coalescedSent, "coalesced.sent"),
        (.quietHoursWake, "quiet-hours.wake"),
        (.droppedByPolicy, "dropped.policy"),
        (.droppedByRateLimit, "dropped.rate-limit"),
        (.push(.message, .accepted), "pushes.message.accepted"),
        (.push(.call, .deadToken), "pushes.call.dead-token"),
        (.push(.read, .retryCap), "pushes.read.retry-cap"),
        (.push(.wake, .expired), "pushes.wake.expired"),
        (.push(nil, .expired), "pushes.unknown.expired"),
        (.push(.message, .superseded), "pushes.message.superseded"),
        (.upstreamAnswers, "upstream.answers"),
        (.upstreamLatencyMilliseconds, "upstream.latency-ms"),
        (.upstreamInFlightCap, "upstream.in-flight-cap"),
        (.upstreamRefused(.forbidden), "upstream.refused.forbidden"),
        (.testPush(.call), "tests.call"),
        (.registered, "registrations.registered"),
        (.unregistered, "registrations.unregistered"),
    ])
    func eachCounterKeepsTheNameOperatorsRead(_ statistic: Statistic, name: String) {
        #expect(statistic.name == name)
    }

    /// A condition the App Server made up names no counter of its own.
    @Test func anUndefinedConditionIsCountedAsOther() {
        #expect(Statistic.upstreamRefused(StanzaError.Condition(rawValue: "made-up")).name == "upstream.refused.other")
    }
}
