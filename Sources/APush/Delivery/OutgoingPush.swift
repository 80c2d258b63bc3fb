import Store

/// One push to send: the summary's JSON and, for a message, the account and chat its collapse tag names.
struct OutgoingPush: Sendable, Equatable {
    var kind: Summary.Kind
    var json: String
    var account: String
    var collapseChat: String?
    /// A message's: its chat's generation when it was decided (`ChatState.generation`).
    var generation: Int64 = 0
    /// Its item in the store (the outbox), once it is stored: kept until its answer is recorded.
    var stored: RetryItem?

    init(summary: Summary, collapseChat: String?) {
        kind = summary.kind
        json = summary.json
        account = summary.account
        self.collapseChat = collapseChat
    }

    /// A stored retry, sealed afresh.
    init?(retry: RetryItem, account: String) {
        guard let kind = Summary.Kind(rawValue: retry.kind) else { return nil }
        self.kind = kind
        json = retry.summary
        self.account = account
        collapseChat = retry.collapseChat
        generation = retry.generation
        stored = retry
    }

    /// A message notice; with the sender hidden it says only that there is something, in no chat.
    static func message(
        account: String, chat: String, notice: HeldNotice, count: Int, badge: Int?, generation: Int64,
        policy: PushPolicy, missedCall: Summary.Call? = nil
    ) -> OutgoingPush {
        var summary = Summary(
            kind: .message, account: account, chat: chat, groupchat: notice.groupchat,
            from: notice.from, count: count, badge: badge, mention: notice.mention, id: notice.id,
            ts: notice.at / 1000)
        if let missedCall {
            summary.missed = true
            summary.call = missedCall
        }
        if policy.sender == .hidden {
            summary.chat = ""
            summary.from = nil
            summary.id = nil
            summary.groupchat = false
            summary.mention = false
            summary.call = nil
        }
        var push = OutgoingPush(summary: summary, collapseChat: chat)
        push.generation = generation
        return push
    }

    /// apushKind: absent for a message, `voip` for a call.
    var apushKind: String? {
        switch kind {
        case .message: nil
        case .call: "voip"
        case .read: "read"
        case .wake: "wake"
        }
    }
}
