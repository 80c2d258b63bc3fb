import Store

/// What the server pushed for, as docs/wire-contract.md (Classifying a publish) classifies it.
enum PushEvent: Sendable, Equatable {
    case message(MessageNotice)
    case call(CallNotice)
    /// A pushed call is over: retracted by the caller (`answeredElsewhere` false: perhaps missed), or
    /// accepted, proceeded or rejected on another device of the account. `by` is the bare JID of who
    /// ended it: only the call's caller may retract it (checked against the stored call).
    case callEnded(sid: String, by: String, answeredElsewhere: Bool)
    case read(chat: String)
    case wake

    var kindName: String {
        switch self {
        case .message: "message"
        case .call: "call"
        case .callEnded: "call-ended"
        case .read: "read"
        case .wake: "wake"
        }
    }
}

struct MessageNotice: Sendable, Equatable {
    /// The conversation's bare JID (the room for a group chat); empty in stock mode without a sender.
    var chat: String
    /// The contact's bare JID, or the occupant's nick in a group chat.
    var from: String
    var groupchat: Bool
    var mention: Bool
    /// The stanza-id or id, so the app can fetch that one message.
    var id: String?
    /// The sender with the origin-id or id: what identifies a copy of the same message.
    var dedupeKey: String?
}

struct CallNotice: Sendable, Equatable {
    var chat: String
    /// The caller's full JID.
    var from: String
    var sid: String
    var media: [String]
}

/// One classified publish: whose it is (when the bridge says) and what happened.
struct ClassifiedPublish: Sendable, Equatable {
    var account: String?
    var event: PushEvent
}
