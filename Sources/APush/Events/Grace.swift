import Store

/// Whether an account's use of another device holds its message pushes now, and until when
/// (docs/wire-contract.md, Grace). Pure: the caller passes what `AccountSessions` knows and the time.
///
/// A held push waits in its chat's window, whose end is the grace's end; at that end the grace is
/// judged again and the end moves on while it still holds. What is not known (a restart, an account
/// never seen, a policy with grace off) holds nothing: the push goes as it would without grace.
struct Grace: Sendable, Equatable {
    /// When the grace ends, to be judged again then; nil when it holds nothing now.
    var endsAt: Timestamp?
    /// Whether a mention in a group chat is held too (`grace-mentions`).
    var holdsMentions = true

    static let none = Grace(endsAt: nil)

    /// The grace of an account: until `grace-seconds` after its last activity on another device, and with
    /// `grace-when` = `connected` also while another session is available (judged again a grace later).
    static func of(
        _ policy: PushPolicy, lastActivity: Timestamp?, connectedElsewhere: Bool, now: Timestamp
    ) -> Grace {
        guard policy.graceSeconds > 0 else { return .none }
        let length = Timestamp(policy.graceSeconds) * 1000
        var end: Timestamp?
        // An activity stamped later than now (another instance's clock) holds no longer than one now would.
        if let last = lastActivity.map({ min($0, now) }), last + length > now {
            end = last + length
        }
        if policy.graceWhen == .connected, connectedElsewhere {
            end = now + length
        }
        return Grace(endsAt: end, holdsMentions: policy.graceMentions)
    }

    /// When the hold of `notice` ends, or nil when it goes now: no grace, or a group chat mention the
    /// policy does not hold. (A call and a missed call are never held: they do not ask.)
    func end(holding notice: HeldNotice, now: Timestamp) -> Timestamp? {
        guard let endsAt, endsAt > now else { return nil }
        if notice.groupchat, notice.mention, !holdsMentions { return nil }
        return endsAt
    }
}
