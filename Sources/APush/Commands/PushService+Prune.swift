import Logging
import Store
import XMPP

extension PushService {
    /// What one look for deleted accounts found on a domain.
    struct DeletedAccounts: Sendable, Equatable {
        /// The accounts with registrations that the server says do not exist, in order.
        var gone: [String] = []
        /// How many accounts with registrations were asked about.
        var checked = 0
        /// Of those, how many the server gave no answer about: kept, whatever they are.
        var unanswered = 0
        /// Where a later look goes on, when this one stopped at `maxAccountsPerPrune` with more left.
        var resumeAfter: String?
    }

    /// One look asks about at most this many accounts (a hundred requests), so an operator's command
    /// ends in bounded time; `resumeAfter` says where the next one starts.
    static let maxAccountsPerPrune = 10_000

    /// Pages through the accounts of `domain` that have registrations, after `after`, and asks the
    /// server about them a hundred at a time.
    func findDeletedAccounts(domain: JID, after: String?, query: AccountsQuery) async throws -> DeletedAccounts {
        var found = DeletedAccounts()
        var cursor = after
        while found.checked < Self.maxAccountsPerPrune {
            let page = try await store.accountsWithRegistrations(
                domain: domain.domainpart, after: cursor,
                limit: min(AccountsQuery.maximumAccounts, Self.maxAccountsPerPrune - found.checked))
            guard let last = page.last else { return found }
            cursor = last
            found.checked += page.count
            guard let gone = await query.gone(page, on: domain) else {
                found.unanswered += page.count
                continue
            }
            found.gone += page.filter(gone.contains)
        }
        let more = try await store.accountsWithRegistrations(domain: domain.domainpart, after: cursor, limit: 1)
        found.resumeAfter = more.isEmpty ? nil : cursor
        return found
    }

    /// Removes every registration of these accounts of `domain`, with no tombstone (their tokens are
    /// not dead: the accounts are); returns how many it removed.
    func removeRegistrations(ofDeletedAccounts accounts: [String], domain: JID) async throws -> Int {
        var removed = 0
        for account in accounts {
            removed += try await store.removeRegistrations(domain: domain.domainpart, account: account, token: nil)
                .count
        }
        statistics.count(.unregistered, by: Int64(removed))
        logger.notice(
            "removed \(removed) registration(s) of \(accounts.count) account(s) of \(domain) that no longer exist")
        return removed
    }
}
