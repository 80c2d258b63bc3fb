import Foundation
import XMPP

/// An account's push policy (docs/wire-contract.md, Policies): which kinds it gets, its window, group chats,
/// muted chats (and whether they count in the badge), quiet hours, whether summaries name the sender, and
/// grace.
public struct PushPolicy: Sendable, Equatable, Codable {
    public enum GroupchatMode: String, Sendable, Codable, CaseIterable {
        case always
        case onMention = "on-mention"
        case never
    }

    public enum SenderMode: String, Sendable, Codable, CaseIterable {
        case named, hidden
    }

    /// What becomes of a message during quiet hours.
    public enum QuietMessages: String, Sendable, Codable, CaseIterable {
        /// A silent wake: the app syncs, the phone stays quiet.
        case wake
        /// Nothing at all.
        case none
    }

    public var messages = true
    public var calls = true
    public var reads = true
    public var wakes = true
    public var coalesceSeconds = 10
    public var groupchat = GroupchatMode.always
    /// Bare JIDs, normalised and sorted.
    public var muted: [String] = []
    /// Whether the muted chats count in the summary's `badge`.
    public var badgeMuted = false
    public var quietHours: QuietHours?
    public var quietMessages = QuietMessages.wake
    /// An IANA time zone name for the quiet hours.
    public var timezone = "UTC"
    public var sender = SenderMode.named

    /// What holds message pushes during grace (`grace-when`).
    public enum GraceWhen: String, Sendable, Codable, CaseIterable {
        /// The account was active on another device within the grace.
        case active
        /// That, or another session of the account is available.
        case connected
    }

    /// How long activity on another device holds message pushes (docs/wire-contract.md, Grace); 0: off.
    public var graceSeconds = 0
    public var graceWhen = GraceWhen.active
    /// Whether a mention in a group chat is held by grace too.
    public var graceMentions = true

    public init() {}

    /// The longest grace a policy may set.
    public static let maximumGraceSeconds = 600

    /// The most chats a submitted policy form may mute, so one account cannot grow its stored
    /// policy (read on every event) without end.
    static let maximumMutedChats = 1000
    /// The most bytes of chats a muted list may hold, checked with the count before any entry is
    /// prepared: preparing a JID (stringprep) is the cost a long list would make the component pay.
    static let maximumMutedBytes = 64 * 1024

    enum CodingKeys: String, CodingKey, CaseIterable {
        case messages, calls, reads, wakes, coalesceSeconds, groupchat, muted, badgeMuted, quietHours, quietMessages,
            timezone, sender, graceSeconds, graceWhen, graceMentions
    }

    /// Every key optional, so a partial document (an operator's defaults, a stored override) fills
    /// the rest from `PushPolicy()`. Bad values fail with the key named.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let base = PushPolicy()
        messages = try container.decodeIfPresent(Bool.self, forKey: .messages) ?? base.messages
        calls = try container.decodeIfPresent(Bool.self, forKey: .calls) ?? base.calls
        reads = try container.decodeIfPresent(Bool.self, forKey: .reads) ?? base.reads
        wakes = try container.decodeIfPresent(Bool.self, forKey: .wakes) ?? base.wakes
        coalesceSeconds = try container.decodeIfPresent(Int.self, forKey: .coalesceSeconds) ?? base.coalesceSeconds
        groupchat = try container.decodeIfPresent(GroupchatMode.self, forKey: .groupchat) ?? base.groupchat
        let mutedChats = try container.decodeIfPresent([String].self, forKey: .muted) ?? []
        switch Self.normalisedChats(mutedChats) {
        case .success(let chats): muted = chats
        case .failure(let error):
            // A DecodingError, so the configuration reader names the full key path.
            throw DecodingError.dataCorruptedError(forKey: .muted, in: container, debugDescription: error.reason)
        }
        badgeMuted = try container.decodeIfPresent(Bool.self, forKey: .badgeMuted) ?? base.badgeMuted
        if let text = try container.decodeIfPresent(String.self, forKey: .quietHours), !text.isEmpty {
            guard let hours = QuietHours(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .quietHours, in: container,
                    debugDescription: "'\(text)' is not HH:MM-HH:MM")
            }
            quietHours = hours
        }
        quietMessages = try container.decodeIfPresent(QuietMessages.self, forKey: .quietMessages) ?? base.quietMessages
        timezone = try container.decodeIfPresent(String.self, forKey: .timezone) ?? base.timezone
        guard TimeZone(identifier: timezone) != nil else {
            throw DecodingError.dataCorruptedError(
                forKey: .timezone, in: container,
                debugDescription: "'\(timezone)' is not an IANA time zone")
        }
        sender = try container.decodeIfPresent(SenderMode.self, forKey: .sender) ?? base.sender
        graceSeconds = try container.decodeIfPresent(Int.self, forKey: .graceSeconds) ?? base.graceSeconds
        guard (0...Self.maximumGraceSeconds).contains(graceSeconds) else {
            throw DecodingError.dataCorruptedError(
                forKey: .graceSeconds, in: container,
                debugDescription: "must be from 0 (off) to \(Self.maximumGraceSeconds)")
        }
        graceWhen = try container.decodeIfPresent(GraceWhen.self, forKey: .graceWhen) ?? base.graceWhen
        graceMentions = try container.decodeIfPresent(Bool.self, forKey: .graceMentions) ?? base.graceMentions
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messages, forKey: .messages)
        try container.encode(calls, forKey: .calls)
        try container.encode(reads, forKey: .reads)
        try container.encode(wakes, forKey: .wakes)
        try container.encode(coalesceSeconds, forKey: .coalesceSeconds)
        try container.encode(groupchat, forKey: .groupchat)
        try container.encode(muted, forKey: .muted)
        try container.encode(badgeMuted, forKey: .badgeMuted)
        try container.encode(quietHours?.description ?? "", forKey: .quietHours)
        try container.encode(quietMessages, forKey: .quietMessages)
        try container.encode(timezone, forKey: .timezone)
        try container.encode(sender, forKey: .sender)
        try container.encode(graceSeconds, forKey: .graceSeconds)
        try container.encode(graceWhen, forKey: .graceWhen)
        try container.encode(graceMentions, forKey: .graceMentions)
    }

    /// Bare, normalised, de-duplicated and sorted; the first bad JID is the error. A list past the
    /// bounds (`maximumMutedChats` entries, `maximumMutedBytes`) is refused before any entry is prepared,
    /// and again once prepared (preparing may lengthen a JID a little), so a list accepted is within
    /// them as it is kept, and its own form or its stored document is accepted again.
    static func normalisedChats(_ chats: [String]) -> Result<[String], PolicyError> {
        if let error = boundsError(of: chats) { return .failure(error) }
        var result = Set<String>()
        for chat in chats where !chat.trimmed.isEmpty {
            guard let jid = try? JID(chat.trimmed) else {
                return .failure(PolicyError(field: "muted", reason: "'\(chat)' is not a valid JID"))
            }
            result.insert(jid.bare.description)
        }
        let normalised = result.sorted()
        if let error = boundsError(of: normalised) { return .failure(error) }
        return .success(normalised)
    }

    private static func boundsError(of chats: [String]) -> PolicyError? {
        guard chats.count <= maximumMutedChats else {
            return PolicyError(
                field: "muted", reason: "\(chats.count) chats, more than the \(maximumMutedChats) allowed")
        }
        let bytes = chats.reduce(0) { $0 + $1.utf8.count }
        guard bytes <= maximumMutedBytes else {
            return PolicyError(
                field: "muted", reason: "\(bytes) bytes of chats, more than the \(maximumMutedBytes) allowed")
        }
        return nil
    }

    public func isMuted(_ chat: String) -> Bool {
        muted.contains(chat)
    }

    /// The document as stored (compact JSON, sorted keys so equal policies store equal text).
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func decode(json: String) throws -> PushPolicy {
        try JSONDecoder().decode(PushPolicy.self, from: Data(json.utf8))
    }
}

/// `HH:MM-HH:MM` in the account's time zone; the range may wrap past midnight (22:00-07:00).
public struct QuietHours: Sendable, Equatable, CustomStringConvertible {
    /// Minutes after midnight.
    public var start: Int
    public var end: Int

    public init?(_ text: String) {
        let parts = text.trimmed.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]), start != end
        else {
            return nil
        }
        self.start = start
        self.end = end
    }

    private static func minutes(_ text: Substring) -> Int? {
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        guard pieces.count == 2, pieces[0].count == 2, pieces[1].count == 2,
            let hours = Int(pieces[0]), let minutes = Int(pieces[1]),
            (0..<24).contains(hours), (0..<60).contains(minutes)
        else { return nil }
        return hours * 60 + minutes
    }

    public func contains(minuteOfDay minute: Int) -> Bool {
        start < end ? (start..<end).contains(minute) : (minute >= start || minute < end)
    }

    public var description: String {
        func format(_ minutes: Int) -> String {
            let hours = minutes / 60
            let rest = minutes % 60
            return (hours < 10 ? "0" : "") + "\(hours):" + (rest < 10 ? "0" : "") + "\(rest)"
        }
        return "\(format(start))-\(format(end))"
    }
}

/// A bad policy value: which field, and why.
public struct PolicyError: Error, Equatable, CustomStringConvertible {
    public var field: String
    public var reason: String

    public var description: String { "\(field): \(reason)" }
}
