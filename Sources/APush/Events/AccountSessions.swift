import Store

/// What the component knows of each account's own other sessions, for grace (docs/wire-contract.md,
/// Grace): when the account was last active on another device (it sent a message, a chat marker, an
/// `active` or `composing` chat state, a XEP-0490 display), and which of its sessions without push are
/// available (presence `show` absent or `chat`). Pure and bounded; the service keeps it under a lock.
///
/// It lives in memory only. A restart, a lost link (the server may have lost its sessions) or an
/// account pushed out by the bound forgets what it knew, and an account it knows nothing of is neither
/// active nor connected: its pushes go as they would without grace. So every missing signal fails
/// towards notifying.
struct AccountSessions: Sendable {
    struct Account: Sendable, Equatable {
        var lastActivity: Timestamp?
        /// The resources of its sessions that are available, at most `sessionsPerAccount`.
        var available: Set<String> = []
    }

    let capacity: Int
    let sessionsPerAccount: Int
    private(set) var accounts: [String: Account] = [:]

    init(capacity: Int = 100_000, sessionsPerAccount: Int = 16) {
        self.capacity = max(1, capacity)
        self.sessionsPerAccount = max(1, sessionsPerAccount)
    }

    /// The account was active on another device at `at`. A time earlier than the one known (a report
    /// delayed on its way) changes nothing.
    mutating func activity(of account: String, at: Timestamp) {
        update(account) { known in
            known.lastActivity = max(known.lastActivity ?? at, at)
        }
    }

    /// A session of the account became available (`true`) or away, extended away, busy or gone
    /// (`false`). A session past the per-account bound is not counted: it could only hold pushes back.
    mutating func presence(of account: String, resource: String, available: Bool) {
        guard available else {
            guard accounts[account] != nil else { return }
            update(account) { $0.available.remove(resource) }
            return
        }
        let bound = sessionsPerAccount
        update(account) { known in
            if known.available.count < bound { known.available.insert(resource) }
        }
    }

    /// The session `resource` enabled push: it is the device being pushed to, not another one.
    mutating func sessionEnabledPush(account: String, resource: String) {
        presence(of: account, resource: resource, available: false)
    }

    func lastActivity(of account: String) -> Timestamp? {
        accounts[account]?.lastActivity
    }

    /// Whether another session of the account is available now.
    func isConnectedElsewhere(_ account: String) -> Bool {
        !(accounts[account]?.available.isEmpty ?? true)
    }

    /// Forgets every account: the link dropped, and what the server reported may no longer hold.
    mutating func forgetAll() {
        accounts.removeAll()
    }

    private mutating func update(_ account: String, _ change: (inout Account) -> Void) {
        if accounts[account] == nil, accounts.count >= capacity {
            // Any account may go: forgetting one only lets its pushes through.
            accounts.remove(at: accounts.startIndex)
        }
        var known = accounts[account] ?? Account()
        change(&known)
        if known == Account() {
            accounts[account] = nil
        } else {
            accounts[account] = known
        }
    }
}
