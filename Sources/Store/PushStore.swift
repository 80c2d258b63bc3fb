/// Everything the push module keeps: registrations, tombstones, per-chat windows and counts, dedupe
/// memory, pushed calls, retries, counters and policies.
///
/// A protocol, so another engine (PostgreSQL, shared by several instances) can stand beside SQLite.
/// Read-modify-write steps (`updateChat`, `firstSighting`) are atomic in the store, so two publishes
/// for one registration never race, and each costs one round trip. Every collection is capped
/// (`StoreLimits`), each cap enforced in the write it limits.
public protocol PushStore: Sendable {
    // MARK: Registrations

    /// Creates or updates the registration for (domain, account, token) (docs/wire-contract.md, Publishes), chosen as
    /// `registration(domain:token:account:)` chooses: a named account adopts a stock-era registration of
    /// the token that has none; a request with no account, among several accounts' registrations, takes
    /// the one with its device key first. `freshCollapseKey` is used for a new registration or a changed device key.
    /// Throws `StoreCapacityError` when a new one would pass the cap on registrations in all; past the cap
    /// of one account, that account's least recently used registration is removed to make room.
    func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration
    /// `register`, unless the token is buried for the request's module and account since `buriedSince`:
    /// then nothing is stored and nil is returned. One transaction, so a token buried while a publish is
    /// handled is never brought back by it (docs/wire-contract.md, Coalescing, reads, calls, answers), and one round
    /// trip on the publish path.
    func registerUnlessBuried(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
        buriedSince: Timestamp
    ) async throws -> Registration?
    /// The registration a publish for (domain, token) from `account` belongs to. With an account: its
    /// own, else the token's registration with no account (stock era). With none (a stock publish, which
    /// cannot tell accounts apart): the one with no account, else the only one, else the one enabled or
    /// changed last.
    func registration(domain: String, token: String, account: String?) async throws -> Registration?
    func registration(id: Int64) async throws -> Registration?
    func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws -> [Registration]
    func countRegistrations(matching filter: RegistrationFilter) async throws -> Int
    /// How many registrations each domain has, from kept totals (no table is counted).
    func registrationsByDomain() async throws -> [String: Int]
    /// Removes an account's registrations (all of them, or the one with `token`); returns them. No
    /// tombstone: the account disabled push, the token is not dead.
    func removeRegistrations(domain: String, account: String, token: String?) async throws -> [Registration]
    /// Removes one registration with everything kept for it and buries its token for its account only
    /// (or for the token's account-less registration), in one transaction; returns it, nil if it was gone.
    @discardableResult
    func retire(registrationID: Int64, at: Timestamp) async throws -> Registration?
    /// The App Server says the token is dead for the module: removes every registration of it (every
    /// account's, every domain's) and buries it for all, in one transaction; returns how many it removed.
    @discardableResult
    func buryDeadToken(_ token: String, pushModule: String, at: Timestamp) async throws -> Int
    /// Records a push attempt's outcome: nil for success, else a short condition such as `wait/timeout`.
    func recordPush(registrationID: Int64, at: Timestamp, error: String?) async throws
    /// Records a wake at `at`, for the rate limit, unless one was recorded after `since`; returns
    /// whether it did. Atomic, so two publishes at once cannot both pass the limit.
    func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) async throws -> Bool

    // MARK: Tombstones

    /// True if the token died for the module after `since` (a nil module matches any), or the account's
    /// registration of it (nil: the one with no account) was removed by a command since then.
    func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp) async throws -> Bool
    /// The account enabled the token again: lifts the token's death and the account's own removal, not
    /// another account's.
    func exhume(token: String, pushModule: String, account: String) async throws

    // MARK: Chats

    /// Runs `change` on the chat's state (nil when none is stored) and stores what it leaves (nil
    /// deletes), atomically. A new chat past the registration's cap is not stored (see `StoreLimits`);
    /// `change`'s result is returned all the same.
    func updateChat<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @escaping @Sendable (inout ChatState?) -> Result
    ) async throws -> Result
    func chats(registrationID: Int64) async throws -> [ChatState]
    /// Open windows whose end has come, soonest first.
    func dueWindows(at now: Timestamp, limit: Int) async throws -> [ChatState]
    /// The earliest end of any open window, so the timer can sleep until then.
    func nextWindowEnd() async throws -> Timestamp?

    // MARK: Dedupe

    /// True the first time `key` is seen for the registration since `since`; remembers it at `at`.
    func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) async throws -> Bool

    // MARK: Pushed calls

    func rememberCall(_ call: PendingCall) async throws
    /// Removes and returns the pushed call with this sid (and this chat, when one is given), if any.
    func takeCall(registrationID: Int64, sid: String, chat: String?) async throws -> PendingCall?

    // MARK: Retries

    /// Stores a retry and returns its id, or nil when a cap leaves no room (the push is then dropped).
    @discardableResult
    func enqueueRetry(_ item: RetryItem) async throws -> Int64?
    func nextRetry() async throws -> Timestamp?
    func updateRetry(_ item: RetryItem) async throws
    func deleteRetry(id: Int64) async throws

    // MARK: Outbox: every push is kept here (as a retry item) from before it is sent until its answer

    /// `updateChat`, and in the same transaction stores the item `change` returns (the push it decided
    /// to send), so that no crash between taking it and the App Server's answer can lose it. Returns the
    /// item with its id.
    func updateChatAndEnqueue<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @escaping @Sendable (inout ChatState?) -> (Result, RetryItem?)
    ) async throws -> (Result, RetryItem?)
    /// `recordPush`, and in the same transaction deletes the push's stored item: its answer is in.
    func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64) async throws
    /// Takes up to `limit` due items whose deadline has not passed, calls first, then the longest due,
    /// and leases each until `leaseUntil` (its next time moves there), atomically: no other turn or
    /// instance sends it while it is in flight, and it comes due again if its sender dies.
    func claimDueRetries(at now: Timestamp, limit: Int, leaseUntil: Timestamp) async throws -> [RetryItem]
    /// Deletes the items whose deadline passed before `now` (a leased one once its lease ends); returns
    /// how many of each kind.
    func deleteExpiredRetries(at now: Timestamp) async throws -> [String: Int]

    // MARK: Counters

    func increment(_ counters: [String: Int64]) async throws
    func counters() async throws -> [String: Int64]

    // MARK: Answers for unknown nodes (capped per hour)

    /// Records an answer at `at` unless `limit` were recorded since `since`; returns whether it did.
    /// Atomic, and it forgets those before `since`, so no more than `limit` are ever kept.
    func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int) async throws -> Bool

    // MARK: Policies (JSON documents, per account; nil account = the stored defaults)

    func policy(account: String?) async throws -> String?
    func setPolicy(account: String?, json: String?) async throws

    // MARK: Maintenance

    /// Forgets expired tombstones, dedupe keys, calls and cap entries, and the state of chats quiet
    /// since `quietChatsBefore` (no open window, nothing held: only an old count is lost).
    func prune(
        tombstonesBefore: Timestamp, sightingsBefore: Timestamp, callsBefore: Timestamp,
        unknownAnswersBefore: Timestamp, quietChatsBefore: Timestamp) async throws
}
