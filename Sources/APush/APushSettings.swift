public import Store

/// The `push` section of the configuration; every key is optional (see config/apush-component.example.json),
/// and its default is the one declared here.
public struct APushSettings: Sendable, Equatable, Decodable {
    /// The App Server's JID (from the top-level `appServer`).
    public var appServer: String = ""
    /// The policy of every account that has not set its own (`push.defaults`, a policy document).
    public var defaults = PushPolicy()
    /// The bounds of the coalescing window an account may choose.
    public var coalesceMinSeconds: Int = 0
    public var coalesceMaxSeconds: Int = 300
    /// The default coalescing window (`push.coalesceSeconds`, the same as `push.defaults.coalesceSeconds`).
    public var coalesceSeconds: Int {
        get { defaults.coalesceSeconds }
        set { defaults.coalesceSeconds = newValue }
    }
    /// At most one wake per registration this often.
    public var wakeIntervalSeconds: Int = 60
    /// An upstream publish with no answer in this long counts as `wait`.
    public var upstreamTimeoutSeconds: Int = 25
    /// Publishes in flight upstream; past it the server's publish is answered `wait`.
    public var maxInFlight: Int = 512
    /// Stored pushes (held at a window's end, retries) sent at once; each may wait `upstreamTimeoutSeconds`.
    public var maxBackgroundDeliveries: Int = 64
    /// How long a message, read or wake is retried after `wait`.
    public var retryMessageSeconds: Int = 120
    /// How long a call is retried: only while it can still ring.
    public var retryCallSeconds: Int = 30
    /// `cancel` answers for unknown nodes per hour; past it, `wait`, so a lost database cannot wipe
    /// every registration on the server.
    public var unknownNodeCancelsPerHour: Int = 5
    /// ...of which one account may have this many, so a user whose every publish is an unknown node
    /// (push enabled without an options form) cannot spend the server's whole budget.
    public var unknownNodeCancelsPerAccountPerHour: Int = 1
    /// How long a message id or call sid is remembered to drop the server's duplicate pushes.
    public var dedupeMinutes: Int = 5
    /// The summary is padded with spaces to a multiple of this many bytes (0: no padding).
    public var paddingBucket: Int = 128
    /// Registrations in all; past it a new one is refused (`wait`), never another's evicted.
    public var maxRegistrations: Int = StoreLimits.defaultRegistrations
    /// Registrations with no account (stock mode), a share of `maxRegistrations`: past it a new one is
    /// refused, so stock mode cannot fill the store for the bridged accounts.
    public var maxStockRegistrations: Int = StoreLimits.defaultRegistrationsWithoutAccount
    /// A registration not registered, renewed or pushed for this long is removed (apps register again
    /// when they start).
    public var registrationExpiryDays: Int = 90

    /// What the store may hold, as these settings say.
    public var storeLimits: StoreLimits {
        StoreLimits(registrations: maxRegistrations, registrationsWithoutAccount: maxStockRegistrations)
    }

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case defaults, coalesceMinSeconds, coalesceMaxSeconds, coalesceSeconds, wakeIntervalSeconds
        case upstreamTimeoutSeconds, maxInFlight, maxBackgroundDeliveries, retryMessageSeconds, retryCallSeconds
        case unknownNodeCancelsPerHour, unknownNodeCancelsPerAccountPerHour, dedupeMinutes, paddingBucket
        case maxRegistrations, maxStockRegistrations, registrationExpiryDays
    }

    /// Each key absent from the section keeps the default declared above; one present must lie in its range.
    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func read(_ key: CodingKeys, into field: WritableKeyPath<APushSettings, Int>, _ range: ClosedRange<Int>) throws
        {
            guard let value = try container.decodeIfPresent(Int.self, forKey: key) else { return }
            guard range.contains(value) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container,
                    debugDescription: "must be from \(range.lowerBound) to \(range.upperBound)")
            }
            self[keyPath: field] = value
        }
        defaults = try container.decodeIfPresent(PushPolicy.self, forKey: .defaults) ?? defaults
        try read(.coalesceMinSeconds, into: \.coalesceMinSeconds, 0...3600)
        try read(.coalesceMaxSeconds, into: \.coalesceMaxSeconds, coalesceMinSeconds...3600)
        try read(.coalesceSeconds, into: \.coalesceSeconds, coalesceMinSeconds...coalesceMaxSeconds)
        try read(.wakeIntervalSeconds, into: \.wakeIntervalSeconds, 0...86_400)
        try read(.upstreamTimeoutSeconds, into: \.upstreamTimeoutSeconds, 1...30)
        try read(.maxInFlight, into: \.maxInFlight, 1...100_000)
        try read(.maxBackgroundDeliveries, into: \.maxBackgroundDeliveries, 1...10_000)
        try read(.retryMessageSeconds, into: \.retryMessageSeconds, 0...3600)
        try read(.retryCallSeconds, into: \.retryCallSeconds, 0...120)
        try read(.unknownNodeCancelsPerHour, into: \.unknownNodeCancelsPerHour, 0...10_000)
        try read(.unknownNodeCancelsPerAccountPerHour, into: \.unknownNodeCancelsPerAccountPerHour, 0...10_000)
        try read(.dedupeMinutes, into: \.dedupeMinutes, 1...1440)
        try read(.paddingBucket, into: \.paddingBucket, 0...2048)
        try read(.maxRegistrations, into: \.maxRegistrations, 1...100_000_000)
        try read(.maxStockRegistrations, into: \.maxStockRegistrations, 0...100_000_000)
        try read(.registrationExpiryDays, into: \.registrationExpiryDays, 1...3650)
    }
}
