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

extension StatisticTests {
    /// The series /metrics shows each counter as: names and labels of the wire contract.
    @Test(arguments: [
        (Statistic.answer(.accepted), "apush_publishes_total", ["answer": "result"]),
        (.answer(.gone), "apush_publishes_total", ["answer": "cancel"]),
        (.answer(.wait(.resourceConstraint)), "apush_publishes_total", ["answer": "wait"]),
        (.refusedPublish(.badRequest), "apush_publishes_total", ["answer": "modify"]),
        (.refusedPublish(.forbidden), "apush_publishes_total", ["answer": "auth"]),
        (.push(.message, .accepted), "apush_pushes_total", ["kind": "message", "outcome": "sent"]),
        (.push(.call, .deadToken), "apush_pushes_total", ["kind": "call", "outcome": "dead"]),
        (.push(.read, .refused), "apush_pushes_total", ["kind": "read", "outcome": "refused"]),
        (.push(.wake, .retrying), "apush_pushes_total", ["kind": "wake", "outcome": "retry"]),
        (.push(.message, .expired), "apush_pushes_total", ["kind": "message", "outcome": "expired"]),
        (.coalescedHeld, "apush_held_total", [:]),
        (.coalescedSent, "apush_coalesced_total", [:]),
        (.deduplicated, "apush_deduplicated_total", [:]),
        (.droppedByPolicy, "apush_dropped_total", ["reason": "policy"]),
        (.droppedByRateLimit, "apush_dropped_total", ["reason": "rate-limit"]),
        (.unknownNodeCancelled, "apush_dropped_total", ["reason": "unknown-node"]),
        (.unknownNodeCapped, "apush_dropped_total", ["reason": "unknown-node"]),
    ])
    func eachCounterShowsAsTheContractsSeries(_ statistic: Statistic, name: String, labels: [String: String]) {
        #expect(statistic.metric?.family.rawValue == name)
        #expect(statistic.metric?.labels == labels)
    }

    /// Their figures are the upstream histogram's.
    @Test func theUpstreamLatencySumsAreNoCounterSeries() {
        #expect(Statistic.upstreamAnswers.metric == nil)
        #expect(Statistic.upstreamLatencyMilliseconds.metric == nil)
    }
}
