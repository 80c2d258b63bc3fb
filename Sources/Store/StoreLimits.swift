/// How much the store keeps, per registration, per account and in all: nothing a peer sends can make it
/// grow without a bound. Each cap is enforced in the store, in the same transaction as the write it
/// limits. What happens at a cap is chosen per collection, for what an operator would expect:
///
/// * dedupe keys, pushed calls: the oldest is forgotten (a duplicate older than the newest keys may
///   be pushed twice; a call that old rang out long ago);
/// * chats: the quietest chat with no open window and nothing held is forgotten (its count restarts).
///   When every chat has a window open, the new chat's message is still pushed, but not tracked: no
///   window is held for it and its count stays 1;
/// * retries: refused, and the push is dropped like an expired one (counted);
/// * registrations of one account (a handful: an app registers each device once): the least recently
///   used (registered, renewed or pushed) is removed, so the device enabled last always works and one
///   account can only crowd out itself;
/// * registrations with no account (stock mode, where a server names none): a new one past their own
///   cap, a share of the one in all, is refused as below, so stock mode cannot fill the store for the
///   bridged accounts;
/// * registrations in all: a new one is refused (`StoreCapacityError`, the server's publish is answered
///   `wait` and the bridge's `registered` gets `resource-constraint`): evicting would let one user's
///   registrations push out everyone else's.
/// * counter names: a new name past the cap is not stored (names come from fixed sets; this is a guard).
/// * the log of policy changes (which account's policy each generation changed): the latest
///   `policyChangesKept`; an instance further behind forgets every cached policy instead.
public struct StoreLimits: Sendable, Equatable {
    public static let defaultRegistrations = 1_000_000
    public static let defaultRegistrationsPerAccount = 8
    public static let defaultRegistrationsWithoutAccount = 250_000
    public static let defaultChatsPerRegistration = 1_000
    public static let defaultSightingsPerRegistration = 1_000
    public static let defaultCallsPerRegistration = 32
    public static let defaultRetriesPerRegistration = 64
    public static let defaultRetries = 100_000
    public static let defaultCounters = 1_024

    /// Registrations in all (the `push.maxRegistrations` setting).
    public var registrations = Self.defaultRegistrations
    public var registrationsPerAccount = Self.defaultRegistrationsPerAccount
    /// Registrations with no account, in all (the `push.maxStockRegistrations` setting).
    public var registrationsWithoutAccount = Self.defaultRegistrationsWithoutAccount
    public var chatsPerRegistration = Self.defaultChatsPerRegistration
    public var sightingsPerRegistration = Self.defaultSightingsPerRegistration
    public var callsPerRegistration = Self.defaultCallsPerRegistration
    public var retriesPerRegistration = Self.defaultRetriesPerRegistration
    public var retries = Self.defaultRetries
    public var counters = Self.defaultCounters

    /// A registration's last use is written again when it is renewed at most this often (a day), so a
    /// publish that finds it unchanged writes nothing; its expiry is counted in days.
    public static let renewalResolution: Timestamp = 86_400_000

    /// The policy changes the store's log keeps (the number is in the triggers of both engines'
    /// migration that made it).
    public static let policyChangesKept: Int64 = 1024

    public init(
        registrations: Int = Self.defaultRegistrations,
        registrationsWithoutAccount: Int = Self.defaultRegistrationsWithoutAccount
    ) {
        self.registrations = registrations
        self.registrationsWithoutAccount = registrationsWithoutAccount
    }
}

/// A cap refused a new row (see `StoreLimits`).
public struct StoreCapacityError: Error, Equatable, CustomStringConvertible {
    /// What is full, e.g. `registrations`.
    public var collection: String
    public var limit: Int

    public init(collection: String, limit: Int) {
        self.collection = collection
        self.limit = limit
    }

    public var description: String { "the store holds its limit of \(limit) \(collection)" }
}
