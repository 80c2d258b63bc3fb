import XMPP

/// Every counter the component keeps, and the name admin-stats shows it under (and /metrics will):
/// the one list of them. The names are read by operators and their tools; keep them.
enum Statistic: Sendable, Equatable {
    // Intake: how the server's publishes were answered.
    /// `answers.result`, `answers.cancel`, `answers.wait`.
    case answer(ServerAnswer)
    /// A publish refused as malformed or not allowed: `answers.error.<condition>`.
    case refusedPublish(StanzaError.Condition)
    /// A publish for a registration removed or dead, answered `cancel`.
    case tombstoneAnswer
    /// A publish for a node never registered, answered `cancel`; past the hourly cap, `wait`.
    case unknownNodeCancelled
    case unknownNodeCapped

    // Events: what they meant.
    /// `events.message`, `events.call`, `events.call-ended`, `events.read`, `events.wake`.
    case event(PushEvent)
    /// A copy of a message or call already seen.
    case deduplicated
    /// A message held for its chat's window to end; a held one sent at the end.
    case coalescedHeld
    case coalescedSent
    /// A message in quiet hours that goes as a wake.
    case quietHoursWake
    /// Nothing pushed: the policy says so, or a wake came within the wake interval.
    case droppedByPolicy
    case droppedByRateLimit

    // Delivery.
    /// `pushes.<kind>.<fate>`; a kind no longer known (read from the store) is `unknown`.
    case push(Summary.Kind?, PushFate)
    /// Answers from the App Server, and their summed latency: admin-stats shows the mean.
    case upstreamAnswers
    case upstreamLatencyMilliseconds
    /// A push not sent at once: `maxInFlight` publishes were waiting on the App Server.
    case upstreamInFlightCap
    /// The App Server refusing our pushes, by condition: `upstream.refused.<condition>`.
    case upstreamRefused(StanzaError.Condition)

    // Commands and the bridge.
    case testPush(PushService.TestKind)
    case registered
    case unregistered

    /// What became of one push.
    enum PushFate: String, Sendable {
        case accepted
        case deadToken = "dead-token"
        case rejected
        case refused
        case retrying
        case expired
        case retryCap = "retry-cap"
        case unsealable
        case superseded
    }

    var name: String {
        switch self {
        case .answer(.accepted): "answers.result"
        case .answer(.gone): "answers.cancel"
        case .answer(.wait): "answers.wait"
        case .refusedPublish(let condition): "answers.error.\(condition.rawValue)"
        case .tombstoneAnswer: "answers.tombstone"
        case .unknownNodeCancelled: "unknown-node.cancelled"
        case .unknownNodeCapped: "unknown-node.capped"
        case .event(let event): "events.\(event.kindName)"
        case .deduplicated: "deduplicated"
        case .coalescedHeld: "coalesced.held"
        case .coalescedSent: "coalesced.sent"
        case .quietHoursWake: "quiet-hours.wake"
        case .droppedByPolicy: "dropped.policy"
        case .droppedByRateLimit: "dropped.rate-limit"
        case .push(let kind, let fate): "pushes.\(kind?.rawValue ?? "unknown").\(fate.rawValue)"
        case .upstreamAnswers: "upstream.answers"
        case .upstreamLatencyMilliseconds: "upstream.latency-ms"
        case .upstreamInFlightCap: "upstream.in-flight-cap"
        case .upstreamRefused(let condition): "upstream.refused.\(Self.counted(condition))"
        case .testPush(let kind): "tests.\(kind.rawValue)"
        case .registered: "registrations.registered"
        case .unregistered: "registrations.unregistered"
        }
    }

    /// A condition from the wire names a counter only if RFC 6120 defines it: a peer cannot add names.
    static func counted(_ condition: StanzaError.Condition) -> String {
        StanzaError.Condition.defined[condition] == nil ? "other" : condition.rawValue
    }
}
