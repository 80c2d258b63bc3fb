/// The steps of one publish, run in one transaction on the store's own thread
/// (`PushStore.transaction`): a publish's registration, policy, dedupe, chat and outbox cost one
/// round trip and one commit, and its decisions see one consistent state. A throw rolls back every
/// step of the transaction. `PushStore` offers each step alone, as a transaction of its own.
public protocol PushTransaction {
    // MARK: Registrations

    /// `PushStore.register`, unless the token is buried for the request's module and account since
    /// `buriedSince`: then nothing is stored and nil is returned, so a token buried while a publish is
    /// handled is never brought back by it (docs/wire-contract.md, Coalescing, reads, calls, answers).
    func registerUnlessBuried(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
        buriedSince: Timestamp
    ) throws -> Registration?
    /// The registration a publish for (domain, token) from `account` belongs to. With an account: its
    /// own, else the token's registration with no account (stock era). With none (a stock publish, which
    /// cannot tell accounts apart): the one with no account, else the only one, else the one enabled or
    /// changed last.
    func registration(domain: String, token: String, account: String?) throws -> Registration?
    /// Records a push attempt's outcome: nil for success, else a short condition such as `wait/timeout`;
    /// with `removingRetry`, deletes the push's stored item too: its answer is in.
    func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64?) throws
    /// Records a wake at `at`, for the rate limit, unless one was recorded after `since`; returns
    /// whether it did.
    func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) throws -> Bool

    // MARK: Tombstones

    /// True if the token died for the module after `since` (a nil module matches any), or the account's
    /// registration of it (nil: the one with no account) was removed by a command since then.
    func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp) throws -> Bool

    // MARK: Chats, dedupe, pushed calls

    /// Runs `change` on the chat's state (nil when none is stored) and stores what it leaves (nil
    /// deletes). A new chat past the registration's cap is not stored (see `StoreLimits`); `change`'s
    /// result is returned all the same. With `unreadExcluding`, `change` also gets the registration's
    /// unread total before the change, less the counts of the chats it names (bare JIDs; 0 for a
    /// registration gone). The store keeps that total with its chats' counts, changed in the
    /// transaction that changes one (a message, a read, a chat forgotten), so this reads one row more,
    /// never a recount: on PostgreSQL, in the statement that reads the chat, with the registration
    /// locked until the transaction ends, so that the total is the one this change starts from.
    func updateChat<Result>(
        registrationID: Int64, chat: String, unreadExcluding: [String]?,
        _ change: (inout ChatState?, _ unreadBefore: Int?) -> Result
    ) throws -> Result
    /// `updateChat`, and stores the item `change` returns (the push it decided to send) in the same
    /// transaction, so that no crash between taking it and the App Server's answer can lose it. Returns
    /// the item with its id; nil past the cap of retries.
    func updateChatAndEnqueue<Result>(
        registrationID: Int64, chat: String, unreadExcluding: [String]?,
        _ change: (inout ChatState?, _ unreadBefore: Int?) -> (Result, RetryItem?)
    ) throws -> (Result, RetryItem?)
    /// True the first time `key` is seen for the registration since `since`; remembers it at `at`.
    func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) throws -> Bool
    func rememberCall(_ call: PendingCall) throws
    /// Removes and returns the pushed call with this sid (and this chat, when one is given), if any.
    func takeCall(registrationID: Int64, sid: String, chat: String?) throws -> PendingCall?

    // MARK: Retries and the outbox

    /// Stores a retry (or a push in the outbox) and returns it with its id, or nil when a cap leaves no
    /// room (the push is then dropped).
    func enqueueRetry(_ item: RetryItem) throws -> RetryItem?

    // MARK: Answers for unknown nodes, policies

    /// Records an answer for `account` ("" for none) at `at` unless `limit` were recorded since `since`,
    /// or `accountLimit` for that account; returns whether it did, and forgets those before `since`, so
    /// no more than `limit` are ever kept.
    func recordUnknownNodeAnswer(at: Timestamp, since: Timestamp, limit: Int, account: String, accountLimit: Int)
        throws -> Bool
    /// Counts one `#test` push of `account` at `at` and returns nil; or, when the account already had
    /// `limit` after `at - window`, counts nothing and returns when its next one is allowed. Kept in the
    /// store, so instances that share it share each account's limit; uses before the window (any
    /// account's) are forgotten at each call.
    func takeTestPush(account: String, at: Timestamp, window: Timestamp, limit: Int) throws -> Timestamp?
    /// The stored policy document of an account; nil account: the stored defaults.
    func policy(account: String?) throws -> String?
    /// Counts every change of a stored policy, by this process or any other sharing the store: policies
    /// resolved at an older generation are stale.
    func policyGeneration() throws -> Int64
    /// The accounts whose stored policy the generations after `after` up to `through` changed (`""`:
    /// the defaults, or a change the log cannot name), or nil when the log no longer holds all of them
    /// (it keeps the latest `StoreLimits.policyChangesKept`): then any policy may have changed.
    func accountsWithPolicyChanged(after: Int64, through: Int64) throws -> Set<String>?
}

extension PushTransaction {
    /// Where a store reads nothing more in one statement: `updateChat`, then `enqueueRetry`.
    public func updateChatAndEnqueue<Result>(
        registrationID: Int64, chat: String, unreadExcluding: [String]?,
        _ change: (inout ChatState?, _ unreadBefore: Int?) -> (Result, RetryItem?)
    ) throws -> (Result, RetryItem?) {
        let (result, item) = try updateChat(
            registrationID: registrationID, chat: chat, unreadExcluding: unreadExcluding, change)
        return (result, try item.flatMap(enqueueRetry))
    }

    /// `updateChat` without the unread total.
    public func updateChat<Result>(registrationID: Int64, chat: String, _ change: (inout ChatState?) -> Result)
        throws -> Result
    {
        try updateChat(registrationID: registrationID, chat: chat, unreadExcluding: nil) { state, _ in change(&state) }
    }

    /// `updateChatAndEnqueue` without the unread total.
    public func updateChatAndEnqueue<Result>(
        registrationID: Int64, chat: String, _ change: (inout ChatState?) -> (Result, RetryItem?)
    ) throws -> (Result, RetryItem?) {
        try updateChatAndEnqueue(registrationID: registrationID, chat: chat, unreadExcluding: nil) { state, _ in
            change(&state)
        }
    }
}

/// Each step alone, as its own transaction.
extension PushStore {
    public func registerUnlessBuried(
        _ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp,
        buriedSince: Timestamp
    ) async throws -> Registration? {
        try await transaction {
            try $0.registerUnlessBuried(
                request, freshCollapseKey: freshCollapseKey, now: now, buriedSince: buriedSince)
        }
    }

    public func registration(domain: String, token: String, account: String?) async throws -> Registration? {
        try await transaction { try $0.registration(domain: domain, token: token, account: account) }
    }

    public func recordPush(registrationID: Int64, at: Timestamp, error: String?, removingRetry retryID: Int64? = nil)
        async throws
    {
        try await transaction {
            try $0.recordPush(registrationID: registrationID, at: at, error: error, removingRetry: retryID)
        }
    }

    public func recordWake(registrationID: Int64, at: Timestamp, unlessSince since: Timestamp) async throws -> Bool {
        try await transaction { try $0.recordWake(registrationID: registrationID, at: at, unlessSince: since) }
    }

    public func isBuried(token: String, pushModule: String?, account: String?, since: Timestamp) async throws
        -> Bool
    {
        try await transaction { try $0.isBuried(token: token, pushModule: pushModule, account: account, since: since) }
    }

    public func updateChat<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @escaping @Sendable (inout ChatState?) -> Result
    ) async throws -> Result {
        try await transaction { try $0.updateChat(registrationID: registrationID, chat: chat, change) }
    }

    public func updateChatAndEnqueue<Result: Sendable>(
        registrationID: Int64, chat: String, _ change: @escaping @Sendable (inout ChatState?) -> (Result, RetryItem?)
    ) async throws -> (Result, RetryItem?) {
        try await transaction { try $0.updateChatAndEnqueue(registrationID: registrationID, chat: chat, change) }
    }

    public func firstSighting(registrationID: Int64, key: String, at: Timestamp, since: Timestamp) async throws -> Bool
    {
        try await transaction { try $0.firstSighting(registrationID: registrationID, key: key, at: at, since: since) }
    }

    public func rememberCall(_ call: PendingCall) async throws {
        try await transaction { try $0.rememberCall(call) }
    }

    public func takeCall(registrationID: Int64, sid: String, chat: String?) async throws -> PendingCall? {
        try await transaction { try $0.takeCall(registrationID: registrationID, sid: sid, chat: chat) }
    }

    /// Stores a retry and returns its id, or nil when a cap leaves no room (the push is then dropped).
    @discardableResult
    public func enqueueRetry(_ item: RetryItem) async throws -> Int64? {
        try await transaction { try $0.enqueueRetry(item)?.id }
    }

    public func recordUnknownNodeAnswer(
        at: Timestamp, since: Timestamp, limit: Int, account: String, accountLimit: Int
    ) async throws -> Bool {
        try await transaction {
            try $0.recordUnknownNodeAnswer(
                at: at, since: since, limit: limit, account: account, accountLimit: accountLimit)
        }
    }

    public func takeTestPush(account: String, at: Timestamp, window: Timestamp, limit: Int) async throws
        -> Timestamp?
    {
        try await transaction { try $0.takeTestPush(account: account, at: at, window: window, limit: limit) }
    }

    public func policy(account: String?) async throws -> String? {
        try await transaction { try $0.policy(account: account) }
    }

    public func accountsWithPolicyChanged(after: Int64, through: Int64) async throws -> Set<String>? {
        try await transaction { try $0.accountsWithPolicyChanged(after: after, through: through) }
    }
}
