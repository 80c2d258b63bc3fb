import Store

/// The unread total a message or read summary carries (`badge`, docs/wire-contract.md): the counts of
/// the registration's chats, which the store sums as it changes them (`PushTransaction.unreadTotal`),
/// less its muted chats' unless its policy counts them (`badgeMuted`). Read in the transaction that
/// changes a chat, before the change, and moved by that change here: no push counts the chats.
struct Badge: Sendable, Equatable {
    /// The chats whose counts it leaves out.
    var excluded: [String]
    /// The total, less the excluded chats' counts, before the change.
    var before: Int

    /// The chats a policy leaves out: its muted ones, unless it counts them.
    static func excludedChats(_ policy: PushPolicy) -> [String] {
        policy.badgeMuted ? [] : policy.muted
    }

    /// The total once `chat`'s count went from `countBefore` to `countAfter`.
    func after(chat: String, countBefore: Int, countAfter: Int) -> Int {
        excluded.contains(chat) ? before : max(0, before + countAfter - countBefore)
    }
}

extension PushService {
    /// The registration's badge before a change of one of its chats, in the transaction that makes
    /// it. Nil where the account's reads cannot reach the component (stock mode): no read would ever
    /// bring the total down, so no badge is sent.
    func badge(
        of registrationID: Int64, policy: PushPolicy, readsVisible: Bool, in transaction: any PushTransaction
    ) throws -> Badge? {
        guard readsVisible else { return nil }
        let excluded = Badge.excludedChats(policy)
        return Badge(
            excluded: excluded, before: try transaction.unreadTotal(registrationID: registrationID, excluding: excluded)
        )
    }
}
