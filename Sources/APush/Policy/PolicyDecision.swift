import Foundation
import Store

/// (policy, event, time) → what to push. Pure, and tested as a table.
enum PolicyDecision {
    enum Verdict: Sendable, Equatable {
        /// Push it (coalesced as usual for a message).
        case deliver
        /// A message that is counted but pushes nothing and opens no window.
        case silence
        /// Quiet hours: the message goes as a silent wake instead.
        case wakeInstead
        /// Not pushed at all (the kind is off).
        case drop
    }

    static func decide(_ policy: PushPolicy, event: PushEvent, at: Timestamp) -> Verdict {
        switch event {
        case .message(let notice):
            return message(policy, chat: notice.chat, groupchat: notice.groupchat, mention: notice.mention, at: at)
        case .call:
            // Muting and quiet hours never silence a call; only `calls` does.
            return policy.calls ? .deliver : .drop
        case .callEnded:
            // A missed call is a message notice of the caller's chat.
            return policy.messages ? .deliver : .drop
        case .read:
            return policy.reads ? .deliver : .drop
        case .wake:
            return policy.wakes ? .deliver : .drop
        }
    }

    /// A message's verdict, from what it turns on: its chat and, in a group chat, a mention. A notice
    /// held for its window's end is judged by this again, under the policy as it is then.
    static func message(_ policy: PushPolicy, chat: String, groupchat: Bool, mention: Bool, at: Timestamp) -> Verdict {
        guard policy.messages, !policy.isMuted(chat) else { return .silence }
        if groupchat {
            switch policy.groupchat {
            case .never: return .silence
            case .onMention where !mention: return .silence
            default: break
            }
        }
        if isQuiet(policy, at: at) {
            // The wake is a push of its own kind: an account that turned wakes off gets none.
            return policy.quietMessages == .wake && policy.wakes ? .wakeInstead : .silence
        }
        return .deliver
    }

    /// Whether `at` falls in the policy's quiet hours, in its time zone.
    static func isQuiet(_ policy: PushPolicy, at: Timestamp) -> Bool {
        guard let hours = policy.quietHours, let zone = TimeZone(identifier: policy.timezone) else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let date = Date(timeIntervalSince1970: TimeInterval(at) / 1000)
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return hours.contains(minuteOfDay: (parts.hour ?? 0) * 60 + (parts.minute ?? 0))
    }
}
