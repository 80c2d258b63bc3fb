import XMPP

/// Every counter the component keeps, the name admin-stats shows it under, and the series /metrics
/// shows it as: the one list of them. The names are read by operators and their tools; keep them.
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
    /// An App Server's answer the store could not record: kept in memory, recorded later, or dropped
    /// (past the cap of those kept).
    case unrecordedAnswer(UnrecordedFate)

    // Commands and the bridge.
    case testPush(PushService.TestKind)
    case registered
    case unregistered
    /// A registration removed by the maintenance chore: unused for `push.registrationExpiryDays`.
    case registrationExpired

    // The store.
    /// A notification between instances, on the shared store's channels, that did not verify: dropped.
    case notificationRejected

    /// What became of an answer the store could not record at once.
    enum UnrecordedFate: String, Sendable {
        case kept = "unrecorded"
        case recorded = "recorded-late"
        case dropped = "unrecorded-dropped"
    }

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

        /// The `outcome` label: the wire contract's names for the App Server's answers.
        var outcome: String {
            switch self {
            case .accepted: "sent"
            case .deadToken: "dead"
            case .retrying: "retry"
            default: rawValue
            }
        }
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
        case .unrecordedAnswer(let fate): "upstream.answers.\(fate.rawValue)"
        case .testPush(let kind): "tests.\(kind.rawValue)"
        case .registered: "registrations.registered"
        case .unregistered: "registrations.unregistered"
        case .registrationExpired: "registrations.expired"
        case .notificationRejected: "store.notifications-rejected"
        }
    }

    /// The Prometheus series this counter adds to (docs/wire-contract.md, Operations). Several counters
    /// may add to one series (every unknown-node answer is one kind of drop); nil for the two whose
    /// figures `apush_upstream_seconds` shows, observed where they are counted.
    var metric: CounterSeries? {
        switch self {
        case .answer(.accepted): CounterSeries(.publishes, ["answer": "result"])
        case .answer(.gone): CounterSeries(.publishes, ["answer": "cancel"])
        case .answer(.wait): CounterSeries(.publishes, ["answer": "wait"])
        case .refusedPublish(let condition): CounterSeries(.publishes, ["answer": condition.defaultType.rawValue])
        case .tombstoneAnswer: CounterSeries(.dropped, ["reason": "tombstone"])
        case .unknownNodeCancelled, .unknownNodeCapped: CounterSeries(.dropped, ["reason": "unknown-node"])
        case .event(let event): CounterSeries(.events, ["kind": event.kindName])
        case .deduplicated: CounterSeries(.deduplicated)
        case .coalescedHeld: CounterSeries(.held)
        case .coalescedSent: CounterSeries(.coalesced)
        case .quietHoursWake: CounterSeries(.quietHoursWakes)
        case .droppedByPolicy: CounterSeries(.dropped, ["reason": "policy"])
        case .droppedByRateLimit: CounterSeries(.dropped, ["reason": "rate-limit"])
        case .push(let kind, let fate):
            CounterSeries(.pushes, ["kind": kind?.rawValue ?? "unknown", "outcome": fate.outcome])
        case .upstreamAnswers, .upstreamLatencyMilliseconds: nil
        case .upstreamInFlightCap: CounterSeries(.inFlightCap)
        case .upstreamRefused(let condition): CounterSeries(.upstreamRefused, ["condition": Self.counted(condition)])
        case .unrecordedAnswer(let fate): CounterSeries(.unrecordedAnswers, ["fate": fate.rawValue])
        case .testPush(let kind): CounterSeries(.testPushes, ["kind": kind.rawValue])
        case .registered: CounterSeries(.registrationChanges, ["change": "registered"])
        case .unregistered: CounterSeries(.registrationChanges, ["change": "unregistered"])
        case .registrationExpired: CounterSeries(.registrationChanges, ["change": "expired"])
        case .notificationRejected: CounterSeries(.rejectedNotifications)
        }
    }

    /// A condition from the wire names a counter only if RFC 6120 defines it: a peer cannot add names.
    static func counted(_ condition: StanzaError.Condition) -> String {
        StanzaError.Condition.defined[condition] == nil ? "other" : condition.rawValue
    }
}

/// One counter series of /metrics: a family and its labels.
struct CounterSeries: Hashable, Sendable {
    let family: Family
    let labels: [String: String]

    init(_ family: Family, _ labels: [String: String] = [:]) {
        self.family = family
        self.labels = labels
    }

    /// The counter families, in the order /metrics lists them.
    enum Family: String, CaseIterable, Sendable {
        case publishes = "apush_publishes_total"
        case pushes = "apush_pushes_total"
        case held = "apush_held_total"
        case coalesced = "apush_coalesced_total"
        case deduplicated = "apush_deduplicated_total"
        case dropped = "apush_dropped_total"
        case events = "apush_events_total"
        case quietHoursWakes = "apush_quiet_hours_wakes_total"
        case inFlightCap = "apush_inflight_cap_total"
        case upstreamRefused = "apush_upstream_refused_total"
        case unrecordedAnswers = "apush_unrecorded_answers_total"
        case testPushes = "apush_test_pushes_total"
        case registrationChanges = "apush_registration_changes_total"
        case rejectedNotifications = "apush_store_notifications_rejected_total"

        var help: String {
            switch self {
            case .publishes: "The server's publishes, by the answer they got."
            case .pushes: "Pushes published to the App Server, by kind and the App Server's answer."
            case .held: "Messages held for their chat's coalescing window."
            case .coalesced: "Held pushes sent when their window ended."
            case .deduplicated: "Copies of a message or call already seen."
            case .dropped: "Publishes that pushed nothing, by reason."
            case .events: "The server's publishes, by what they meant."
            case .quietHoursWakes: "Messages in quiet hours sent as a wake."
            case .inFlightCap: "Pushes kept for later: the cap of publishes awaiting the App Server was reached."
            case .upstreamRefused: "Pushes the App Server refused, by error condition."
            case .unrecordedAnswers:
                "App Server answers the store could not record: kept in memory, recorded later, or dropped."
            case .testPushes: "Test pushes sent by the #test command, by kind."
            case .registrationChanges: "Registrations made or removed through the bridge, or expired unused."
            case .rejectedNotifications:
                "Notifications on the shared store's channels that did not verify, dropped unread."
            }
        }
    }
}
