/// Everything the push module keeps: registrations, tombstones, per-chat windows and counts, dedupe
/// memory, pushed calls, retries, counters and policies.
///
/// A protocol, so another engine (PostgreSQL, shared by several instances) can stand beside SQLite.
/// Read-modify-write steps (`updateChat`, `firstSighting`) are atomic in the store, so two publishes
/// for one registration never race, and each costs one round trip.
public protocol PushStore: Sendable {
    // MARK: Registrations

    /// Creates or updates the registration for (domain, token). A known account is kept when the
    /// request names none; `freshCollapseKey` is used for a new registration or a changed device key.
    func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration
    func registration(domain: String, token: String) async throws -> Registration?
    func registration(id: Int64) async throws -> Registration?
    func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws -> [Registration]
    func countRegistrations(matching filter: RegistrationFilter) async throws -> Int
    /// Removes one registration and everything kept for it.
    func removeRegistration(id: Int64) async throws
    /// Removes an account's registrations (all of them, or the one with `token`); returns them.
    func removeRegistrations(domain: String, account: String, token: String?) async throws -> [Registration]
    /// Records a push attempt's outcome: nil for success, else a short condition such as `wait/timeout`.
    func recordPush(registrationID: Int64, at: Timestamp, error: String?) async throws
    /// Records a wake at `at`, for the rate limit, unless one was recorded after `since`; returns
    /// whether it did. Atomic, so two publishes at once cannot both pass the limit.
    func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) async throws -> Bool

    // MARK: Tombstones of dead tokens

    func bury(token: String, pushModule: String, at: Timestamp) async throws
    /// True if (token, module) died after `since`; a nil module matches any.
    func isBuried(token: String, pushModule: String?, since: Timestamp) async throws -> Bool
    func exhume(token: String, pushModule: String) async throws

    // MARK: Chats

    /// Runs `change` on the chat's state (nil when none is stored) and stores what it leaves (nil
    /// deletes), atomically.
    func updateChat<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @Sendable (inout ChatState?) -> Result
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

    @discardableResult
    func enqueueRetry(_ item: RetryItem) async throws -> Int64
    func nextRetry() async throws -> Timestamp?
    func updateRetry(_ item: RetryItem) async throws
    func deleteRetry(id: Int64) async throws

    // MARK: Outbox: every push is kept here (as a retry item) from before it is sent until its answer

    /// `updateChat`, and in the same transaction stores the item `change` returns (the push it decided
    /// to send), so that no crash between taking it and the App Server's answer can lose it. Returns the
    /// item with its id.
    func updateChatAndEnqueue<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @Sendable (inout ChatState?) -> (Result, RetryItem?)
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

    func recordUnknownNodeAnswer(at: Timestamp) async throws
    func unknownNodeAnswers(since: Timestamp) async throws -> Int

    // MARK: Policies (JSON documents, per account; nil account = the stored defaults)

    func policy(account: String?) async throws -> String?
    func setPolicy(account: String?, json: String?) async throws

    // MARK: Maintenance

    /// Forgets expired tombstones, dedupe keys, calls and cap entries, and the state of chats quiet
    /// since `quietChatsBefore` (no open window, nothing held: only an old count is lost).
    func prune(tombstonesBefore: Timestamp, sightingsBefore: Timestamp, callsBefore: Timestamp,
               unknownAnswersBefore: Timestamp, quietChatsBefore: Timestamp) async throws
}
