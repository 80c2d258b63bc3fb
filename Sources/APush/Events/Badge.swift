import Store

/// The unread total a message or read summary carries (`badge`, docs/wire-contract.md): the counts of
/// the registration's chats, which the store sums as it changes them (`PushTransaction.updateChat`),
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

extension Badge {
    /// The badge of the total the store read before a chat's change (nil: none was read).
    static func read(excluded: [String]?, before: Int?) -> Badge? {
        guard let excluded, let before else { return nil }
        return Badge(excluded: excluded, before: before)
    }
}

extension PushService {
    /// The chats the badge of a change of one of a registration's chats leaves out, for the store to
    /// read the total less theirs with the chat it changes (`PushTransaction.updateChat`'s
    /// `unreadExcluding`). Nil where the account's reads cannot reach the component (stock mode): no
    /// read would ever bring the total down, so no badge is read or sent.
    func badgeExclusions(policy: PushPolicy, readsVisible: Bool) -> [String]? {
        readsVisible ? Badge.excludedChats(policy) : nil
    }
}
