/// Everything the push module keeps: registrations, tombstones, per-chat windows and counts, dedupe
/// memory, pushed calls, retries, counters and policies.
///
/// A protocol, so another engine (PostgreSQL, shared by several instances) can stand beside SQLite.
/// The steps of a publish are `PushTransaction`'s, run together in one transaction (`transaction`) or
/// each alone: read-modify-write steps are atomic, so two publishes for one registration never race. Every collection is capped
/// (`StoreLimits`), each cap enforced in the write it limits.
public protocol PushStore: Sendable {
    // MARK: One transaction

    /// Runs `body` in one transaction on the store's own thread (see `PushTransaction`, whose steps are
    /// also offered here one transaction each). Commits if `body` returns; a throw rolls it all back.
    /// A store may commit several callers' transactions at once (SQLite's group commit): each returns
    /// only once its own has committed.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws -> T
    /// Runs `body` as `transaction` does, but returns its value as soon as it has run, with the commit
    /// still to come (where the store can tell them apart): the caller may work on what it decided (seal
    /// a push) while the store commits, and must await `commit` before acting outside the process on it.
    /// A throw from `body` is thrown here; a failed commit, from `commit.committed()`.
    func transactionDecided<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T) async throws
        -> Decided<T>
    /// Runs `body` in a transaction of its own without waiting for it: for a write nobody awaits (a
    /// push's answer, recorded while the server has its own). A failure goes to `failed`. Where one
    /// process owns the store (SQLite), it runs after every transaction asked for before it and before
    /// any asked for later, and may wait a moment to share a later one's commit; where several share
    /// it (PostgreSQL), whose transactions interleave anyway, it runs alongside the others, so what it
    /// writes must come out the same in any order (counts, the latest of two times, an item's removal).
    func transactionInBackground(
        _ body: @escaping @Sendable (any PushTransaction) throws -> Void,
        failed: @escaping @Sendable (any Error) -> Void)

    /// Calls `announce` with the due time of work stored by any instance sharing the store (a window
    /// that ends, a retry, a lease that runs out), or `Timestamp.min` when any may be due, until the
    /// watch is stopped; nil where no other process writes the store (this one rings its own loop).
    /// An announcement that does not prove it comes from an instance is dropped, and calls `rejected`.
    func watchDueWork(_ announce: @escaping @Sendable (Timestamp) -> Void, rejected: @escaping @Sendable () -> Void)
        throws -> (any StoreWatch)?
    /// Passes `message` (at most `peerMessageLimit` bytes of UTF-8) to every instance sharing the store
    /// that watches (`watchPeers`), this one included; nothing where no other process shares it.
    func tellPeers(_ message: String) async throws
    /// Calls `hear` with every message an instance sharing the store tells (`tellPeers`) until the
    /// watch is stopped; nil where no other process shares the store. A message that does not prove it
    /// comes from an instance is dropped, and calls `rejected`. After the watch starts listening, and
    /// after every time it listens again (the store came back), it calls `listening`: what was told
    /// meanwhile was lost.
    func watchPeers(
        _ hear: @escaping @Sendable (String) -> Void, listening: @escaping @Sendable () -> Void,
        rejected: @escaping @Sendable () -> Void
    )
        throws -> (any StoreWatch)?
    /// The time on the clock every instance sharing the store agrees on (the database's), in
    /// milliseconds since 1970; nil where one process alone uses the store: its own clock is the one.
    func clockReading() async throws -> Timestamp?

    // MARK: Registrations

    /// Creates or updates the registration for (domain, account, token) (docs/wire-contract.md, Publishes), chosen as
    /// `registration(domain:token:account:)` chooses: a named account adopts a stock-era registration of
    /// the token that has none; a request with no account, among several accounts' registrations, takes
    /// the one with its device key first. `freshCollapseKey` is used for a new registration or a changed device key.
    /// Throws `StoreCapacityError` when a new one would pass the cap on registrations in all; past the cap
    /// of one account, that account's least recently used registration is removed to make room.
    func register(_ request: RegistrationRequest, freshCollapseKey: [UInt8], now: Timestamp) async throws
        -> Registration
    func registration(id: Int64) async throws -> Registration?
    func registrations(matching filter: RegistrationFilter, limit: Int, offset: Int) async throws -> [Registration]
    func countRegistrations(matching filter: RegistrationFilter) async throws -> Int
    /// How many registrations each domain has, from kept totals (no table is counted).
    func registrationsByDomain() async throws -> [String: Int]
    /// How many registrations have no account (stock mode), from a kept total.
    func countRegistrationsWithoutAccount() async throws -> Int
    /// Removes up to `limit` registrations not registered, renewed or pushed since `unusedBefore`, with
    /// everything kept for them, and no tombstone (an app that comes back registers again); returns
    /// how many.
    func expireRegistrations(unusedBefore: Timestamp, limit: Int) async throws -> Int
    /// The accounts of `domain` that have registrations, in order, once each: at most `limit` of those
    /// after `after` (nil: from the first), so that all of them are read a page at a time.
    func accountsWithRegistrations(domain: String, after: String?, limit: Int) async throws -> [String]
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

    // MARK: Tombstones

    /// The account enabled the token again: lifts the token's death and the account's own removal, not
    /// another account's.
    func exhume(token: String, pushModule: String, account: String) async throws

    // MARK: Chats

    func chats(registrationID: Int64) async throws -> [ChatState]
    /// Open windows whose end has come, soonest first.
    func dueWindows(at now: Timestamp, limit: Int) async throws -> [ChatState]
    /// The earliest end of any open window, so the timer can sleep until then.
    func nextWindowEnd() async throws -> Timestamp?

    // MARK: Retries

    func nextRetry() async throws -> Timestamp?
    func updateRetry(_ item: RetryItem) async throws
    func deleteRetry(id: Int64) async throws

    // MARK: Outbox: every push is kept here (as a retry item) from before it is sent until its answer

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

    // MARK: Policies (JSON documents, per account; nil account = the stored defaults)

    func setPolicy(account: String?, json: String?) async throws

    // MARK: Maintenance

    /// Forgets expired tombstones, dedupe keys, calls and cap entries, and the state of chats quiet
    /// since `quietChatsBefore` (no open window, nothing held: only an old count is lost).
    func prune(
        tombstonesBefore: Timestamp, sightingsBefore: Timestamp, callsBefore: Timestamp,
        unknownAnswersBefore: Timestamp, quietChatsBefore: Timestamp) async throws
}

/// What a store tells of other instances, heard until stopped.
public protocol StoreWatch: Sendable {
    func stop()
}

/// The longest message `tellPeers` passes (PostgreSQL's limit on a notification's payload is 8,000
/// bytes).
public let peerMessageLimit = 7_900

extension PushStore {
    /// A store that cannot tell the body's end from its commit (PostgreSQL may run a body again after a
    /// conflict) returns once it has committed.
    public func transactionDecided<T: Sendable>(_ body: @escaping @Sendable (any PushTransaction) throws -> T)
        async throws -> Decided<T>
    {
        Decided(try await transaction(body), commit: .done)
    }
}
