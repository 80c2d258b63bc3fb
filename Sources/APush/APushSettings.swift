public import Store

/// The `push` section of the configuration; every key is optional (see config/apush-component.example.json).
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
    /// How long a message id or call sid is remembered to drop the server's duplicate pushes.
    public var dedupeMinutes: Int = 5
    /// The summary is padded with spaces to a multiple of this many bytes (0: no padding).
    public var paddingBucket: Int = 128
    /// Registrations in all; past it a new one is refused (`wait`), never another's evicted.
    public var maxRegistrations: Int = StoreLimits.defaultRegistrations

    /// What the store may hold, as these settings say.
    public var storeLimits: StoreLimits { StoreLimits(registrations: maxRegistrations) }

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case defaults, coalesceMinSeconds, coalesceMaxSeconds, coalesceSeconds, wakeIntervalSeconds, upstreamTimeoutSeconds, maxInFlight, maxBackgroundDeliveries,
             retryMessageSeconds,
             retryCallSeconds, unknownNodeCancelsPerHour, dedupeMinutes, paddingBucket, maxRegistrations
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func read(_ key: CodingKeys, _ fallback: Int, minimum: Int, maximum: Int) throws -> Int {
            guard let value = try container.decodeIfPresent(Int.self, forKey: key) else { return fallback }
            guard (minimum...maximum).contains(value) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container,
                                                       debugDescription: "must be from \(minimum) to \(maximum)")
            }
            return value
        }
        defaults = try container.decodeIfPresent(PushPolicy.self, forKey: .defaults) ?? PushPolicy()
        coalesceMinSeconds = try read(.coalesceMinSeconds, 0, minimum: 0, maximum: 3600)
        coalesceMaxSeconds = try read(.coalesceMaxSeconds, 300, minimum: coalesceMinSeconds, maximum: 3600)
        coalesceSeconds = try read(.coalesceSeconds, defaults.coalesceSeconds, minimum: coalesceMinSeconds,
                                   maximum: coalesceMaxSeconds)
        wakeIntervalSeconds = try read(.wakeIntervalSeconds, 60, minimum: 0, maximum: 86_400)
        upstreamTimeoutSeconds = try read(.upstreamTimeoutSeconds, 25, minimum: 1, maximum: 30)
        maxInFlight = try read(.maxInFlight, 512, minimum: 1, maximum: 100_000)
        maxBackgroundDeliveries = try read(.maxBackgroundDeliveries, 64, minimum: 1, maximum: 10_000)
        retryMessageSeconds = try read(.retryMessageSeconds, 120, minimum: 0, maximum: 3600)
        retryCallSeconds = try read(.retryCallSeconds, 30, minimum: 0, maximum: 120)
        unknownNodeCancelsPerHour = try read(.unknownNodeCancelsPerHour, 5, minimum: 0, maximum: 10_000)
        dedupeMinutes = try read(.dedupeMinutes, 5, minimum: 1, maximum: 1440)
        paddingBucket = try read(.paddingBucket, 128, minimum: 0, maximum: 2048)
        maxRegistrations = try read(.maxRegistrations, StoreLimits.defaultRegistrations, minimum: 1,
                                    maximum: 100_000_000)
    }
}
