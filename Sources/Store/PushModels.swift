/// Milliseconds since the Unix epoch: what the store keeps for every time.
public typealias Timestamp = Int64

/// Which calls a registration takes (`apushCalls`).
public enum CallsMode: String, Sendable, Codable, CaseIterable {
    /// Absent, `0` or `false`: messages only.
    case none
    /// `1` or `true`: messages and calls (one FCM token).
    case also
    /// `only`: calls and nothing else (an iOS PushKit token).
    case only
}

/// What a client asked for when it enabled push, as the server echoes it on every publish.
public struct RegistrationRequest: Sendable, Equatable {
    public var domain: String
    /// The device token, which is also the upstream node. Stored, never logged.
    public var token: String
    public var pushModule: String
    /// The bare JID of the account, when the bridge named it.
    public var account: String?
    /// The device's raw X25519 public key.
    public var deviceKey: [UInt8]
    public var calls: CallsMode
    public var wantsReads: Bool

    public init(
        domain: String, token: String, pushModule: String, account: String?, deviceKey: [UInt8],
        calls: CallsMode, wantsReads: Bool
    ) {
        self.domain = domain
        self.token = token
        self.pushModule = pushModule
        self.account = account
        self.deviceKey = deviceKey
        self.calls = calls
        self.wantsReads = wantsReads
    }
}

public struct Registration: Sendable, Equatable {
    public var id: Int64
    public var domain: String
    public var token: String
    public var pushModule: String
    public var account: String?
    public var deviceKey: [UInt8]
    public var calls: CallsMode
    public var wantsReads: Bool
    /// The HMAC key of the collapse tag; renewed when the token or the device key changes.
    public var collapseKey: [UInt8]
    public var createdAt: Timestamp
    public var lastPushAt: Timestamp?
    public var lastError: String?
    public var lastErrorAt: Timestamp?
    public var lastWakeAt: Timestamp?
    public var pushCount: Int64
    public var errorCount: Int64
    /// When it was last registered, renewed (to within `StoreLimits.renewalResolution`) or pushed: one
    /// unused for `push.registrationExpiryDays` is expired.
    public var lastUsedAt: Timestamp

    public init(
        id: Int64, domain: String, token: String, pushModule: String, account: String?,
        deviceKey: [UInt8], calls: CallsMode, wantsReads: Bool, collapseKey: [UInt8],
        createdAt: Timestamp, lastPushAt: Timestamp? = nil, lastError: String? = nil,
        lastErrorAt: Timestamp? = nil, lastWakeAt: Timestamp? = nil, pushCount: Int64 = 0,
        errorCount: Int64 = 0, lastUsedAt: Timestamp? = nil
    ) {
        self.id = id
        self.domain = domain
        self.token = token
        self.pushModule = pushModule
        self.account = account
        self.deviceKey = deviceKey
        self.calls = calls
        self.wantsReads = wantsReads
        self.collapseKey = collapseKey
        self.createdAt = createdAt
        self.lastPushAt = lastPushAt
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.lastWakeAt = lastWakeAt
        self.pushCount = pushCount
        self.errorCount = errorCount
        self.lastUsedAt = lastUsedAt ?? createdAt
    }

    public var takesMessages: Bool { calls != .only }
    public var takesCalls: Bool { calls != .none }
    public var takesReads: Bool { wantsReads && calls != .only }
}

/// The latest message held in a coalescing window: metadata only, never text.
public struct HeldNotice: Sendable, Equatable, Codable {
    public var from: String
    public var id: String?
    public var groupchat: Bool
    public var mention: Bool
    public var at: Timestamp

    public init(from: String, id: String?, groupchat: Bool, mention: Bool, at: Timestamp) {
        self.from = from
        self.id = id
        self.groupchat = groupchat
        self.mention = mention
        self.at = at
    }
}

/// One registration's state for one chat: its count, its coalescing window, its read bookkeeping.
///
/// The rules that change it are APush's (`ChatCoalescer`); the record stays beside `PushStore`, because
/// a store queries its fields: the window end for `dueWindows`, the last times and the held notice for
/// `prune` and the cap on chats. An opaque record owned by APush would lose those queries.
public struct ChatState: Sendable, Equatable {
    public var registrationID: Int64
    public var chat: String
    /// Messages since the last read the component learned of.
    public var count: Int
    public var lastMessageAt: Timestamp?
    /// When the open window ends; nil when no window is open.
    public var windowEndsAt: Timestamp?
    public var windowMilliseconds: Int64
    /// The latest message held in the open window, to be pushed when it ends.
    public var held: HeldNotice?
    /// A notice was pushed since the last read: a read push has something to withdraw.
    public var noticedSinceRead: Bool
    public var lastReadPushAt: Timestamp?
    /// Counts every decision on the chat (a message, a read, a held notice's follow-up) and never goes
    /// back, unlike `count`: a stored push decided at an older generation is stale.
    public var generation: Int64

    public init(
        registrationID: Int64, chat: String, count: Int = 0, lastMessageAt: Timestamp? = nil,
        windowEndsAt: Timestamp? = nil, windowMilliseconds: Int64 = 10_000, held: HeldNotice? = nil,
        noticedSinceRead: Bool = false, lastReadPushAt: Timestamp? = nil, generation: Int64 = 0
    ) {
        self.registrationID = registrationID
        self.chat = chat
        self.count = count
        self.lastMessageAt = lastMessageAt
        self.windowEndsAt = windowEndsAt
        self.windowMilliseconds = windowMilliseconds
        self.held = held
        self.noticedSinceRead = noticedSinceRead
        self.lastReadPushAt = lastReadPushAt
        self.generation = generation
    }
}

/// A call that was pushed and may still be retracted (then it becomes a missed call).
public struct PendingCall: Sendable, Equatable {
    public var registrationID: Int64
    public var sid: String
    public var chat: String
    public var caller: String
    public var media: [String]
    public var at: Timestamp

    public init(registrationID: Int64, sid: String, chat: String, caller: String, media: [String], at: Timestamp) {
        self.registrationID = registrationID
        self.sid = sid
        self.chat = chat
        self.caller = caller
        self.media = media
        self.at = at
    }
}

/// A push the App Server asked us to try again (`wait`, or no answer), kept until its deadline.
public struct RetryItem: Sendable, Equatable {
    public var id: Int64
    public var registrationID: Int64
    /// The summary JSON (metadata only); it is sealed afresh for every attempt.
    public var summary: String
    /// `message`, `call`, `read` or `wake`: decides apushKind and the collapse tag.
    public var kind: String
    /// The chat whose collapse tag a message push carries.
    public var collapseChat: String?
    public var attempts: Int
    public var nextAt: Timestamp
    public var deadline: Timestamp
    /// For a message push: its chat's `ChatState.generation` when it was decided.
    public var generation: Int64

    public init(
        id: Int64 = 0, registrationID: Int64, summary: String, kind: String, collapseChat: String?,
        attempts: Int, nextAt: Timestamp, deadline: Timestamp, generation: Int64 = 0
    ) {
        self.id = id
        self.registrationID = registrationID
        self.summary = summary
        self.kind = kind
        self.collapseChat = collapseChat
        self.attempts = attempts
        self.nextAt = nextAt
        self.deadline = deadline
        self.generation = generation
    }
}

/// Which registrations an operator lists.
public struct RegistrationFilter: Sendable, Equatable {
    public var account: String?
    public var domain: String?
    public var pushModule: String?
    /// The token's fingerprint as `Fingerprint.of` writes it (`#` and 8 hex digits).
    public var fingerprint: String?

    public init(
        account: String? = nil, domain: String? = nil, pushModule: String? = nil, fingerprint: String? = nil
    ) {
        self.account = account
        self.domain = domain
        self.pushModule = pushModule
        self.fingerprint = fingerprint
    }
}
