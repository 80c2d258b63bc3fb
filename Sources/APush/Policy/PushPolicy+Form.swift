import Foundation
import XMPP

/// The policy as a XEP-0004 form of type `urn:xmpp:apush:policy:0` (docs/wire-contract.md (Commands) fixes the vars).
extension PushPolicy {
    func form(title: String, minimumWindow: Int, maximumWindow: Int) -> DataForm {
        DataForm(
            type: .form, formType: APushNamespace.policyForm, title: title,
            instructions: ["Which pushes this account gets, and how."],
            fields: [
                .init(variable: "messages", type: .boolean, label: "Messages", values: [messages ? "1" : "0"]),
                .init(variable: "calls", type: .boolean, label: "Calls", values: [calls ? "1" : "0"]),
                .init(
                    variable: "reads", type: .boolean, label: "Read notices (clear what was read elsewhere)",
                    values: [reads ? "1" : "0"]),
                .init(variable: "wakes", type: .boolean, label: "Silent wakes", values: [wakes ? "1" : "0"]),
                .init(
                    variable: "coalesce-seconds", type: .textSingle,
                    label: "Coalescing window in seconds (\(minimumWindow)-\(maximumWindow))",
                    values: [String(coalesceSeconds)]),
                .init(
                    variable: "groupchat", type: .listSingle, label: "Group chats", values: [groupchat.rawValue],
                    options: GroupchatMode.allCases.map { .init(label: $0.rawValue, value: $0.rawValue) }),
                .init(variable: "muted", type: .jidMulti, label: "Muted chats", values: muted),
                .init(
                    variable: "badge-muted", type: .boolean, label: "Count muted chats in the unread badge",
                    values: [badgeMuted ? "1" : "0"]),
                .init(
                    variable: "quiet-hours", type: .textSingle, label: "Quiet hours (HH:MM-HH:MM, empty for none)",
                    values: [quietHours?.description ?? ""]),
                .init(
                    variable: "quiet-messages", type: .listSingle, label: "Messages during quiet hours",
                    values: [quietMessages.rawValue],
                    options: QuietMessages.allCases.map { .init(label: $0.rawValue, value: $0.rawValue) }),
                .init(
                    variable: "timezone", type: .textSingle, label: "Time zone (IANA, e.g. Europe/Prague)",
                    values: [timezone]),
                .init(
                    variable: "sender", type: .listSingle, label: "Name the sender in notices",
                    values: [sender.rawValue],
                    options: SenderMode.allCases.map { .init(label: $0.rawValue, value: $0.rawValue) }),
                .init(
                    variable: "grace-seconds", type: .textSingle,
                    label: "Grace in seconds: hold message pushes while you use another device "
                        + "(0 off, at most \(Self.maximumGraceSeconds))",
                    values: [String(graceSeconds)]),
                .init(
                    variable: "grace-when", type: .listSingle, label: "Grace holds pushes while another device is",
                    values: [graceWhen.rawValue],
                    options: [
                        .init(
                            label: "active: you wrote or read there within the grace", value: GraceWhen.active.rawValue),
                        .init(
                            label: "connected: also while it is online and available",
                            value: GraceWhen.connected.rawValue),
                    ]),
                .init(
                    variable: "grace-mentions", type: .boolean, label: "Grace holds group chat mentions too",
                    values: [graceMentions ? "1" : "0"]),
            ])
    }

    /// This policy with the submitted form's values; fields left out keep their value. The first bad
    /// value is the error, naming its field, and nothing is changed.
    func applying(_ form: DataForm, minimumWindow: Int, maximumWindow: Int) throws(PolicyError) -> PushPolicy {
        var policy = self
        func boolean(_ field: String) throws(PolicyError) -> Bool? { try form.typedBoolean(field) }
        func choice<T: RawRepresentable & CaseIterable>(_ field: String, _ type: T.Type) throws(PolicyError) -> T?
        where T.RawValue == String {
            guard let value = form.value(field) else { return nil }
            guard let parsed = T(rawValue: value.trimmed) else {
                let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
                throw PolicyError(field: field, reason: "'\(value)' is not one of \(allowed)")
            }
            return parsed
        }
        policy.messages = try boolean("messages") ?? policy.messages
        policy.calls = try boolean("calls") ?? policy.calls
        policy.reads = try boolean("reads") ?? policy.reads
        policy.wakes = try boolean("wakes") ?? policy.wakes
        if let value = form.value("coalesce-seconds") {
            guard let seconds = Int(value.trimmed), (minimumWindow...maximumWindow).contains(seconds) else {
                throw PolicyError(
                    field: "coalesce-seconds",
                    reason: "'\(value)' is not a whole number from \(minimumWindow) to \(maximumWindow)")
            }
            policy.coalesceSeconds = seconds
        }
        policy.groupchat = try choice("groupchat", GroupchatMode.self) ?? policy.groupchat
        if form.field("muted") != nil {
            policy.muted = try Self.normalisedChats(form.values("muted")).get()
        }
        policy.badgeMuted = try boolean("badge-muted") ?? policy.badgeMuted
        if let value = form.value("quiet-hours") ?? form.field("quiet-hours").map({ _ in "" }) {
            if value.trimmed.isEmpty {
                policy.quietHours = nil
            } else {
                guard let hours = QuietHours(value) else {
                    throw PolicyError(field: "quiet-hours", reason: "'\(value)' is not HH:MM-HH:MM (e.g. 22:00-07:00)")
                }
                policy.quietHours = hours
            }
        }
        policy.quietMessages = try choice("quiet-messages", QuietMessages.self) ?? policy.quietMessages
        if let value = form.value("timezone") {
            guard TimeZone(identifier: value.trimmed) != nil else {
                throw PolicyError(
                    field: "timezone", reason: "'\(value)' is not an IANA time zone such as Europe/Prague")
            }
            policy.timezone = value.trimmed
        }
        policy.sender = try choice("sender", SenderMode.self) ?? policy.sender
        if let value = form.value("grace-seconds") {
            guard let seconds = Int(value.trimmed), (0...Self.maximumGraceSeconds).contains(seconds) else {
                throw PolicyError(
                    field: "grace-seconds",
                    reason: "'\(value)' is not a whole number from 0 (off) to \(Self.maximumGraceSeconds)")
            }
            policy.graceSeconds = seconds
        }
        policy.graceWhen = try choice("grace-when", GraceWhen.self) ?? policy.graceWhen
        policy.graceMentions = try boolean("grace-mentions") ?? policy.graceMentions
        return policy
    }

    /// The fields that differ from `base`, as a stored override: a later change of the defaults still
    /// reaches every field the account did not set itself.
    func override(over base: PushPolicy) -> String? {
        guard let mine = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let theirs = try? JSONSerialization.jsonObject(with: Data(base.json.utf8)) as? [String: Any]
        else {
            return nil
        }
        func text(_ key: String, _ value: Any?) -> String? {
            guard let value else { return nil }
            return (try? JSONSerialization.data(withJSONObject: [key: value], options: [.sortedKeys]))
                .map { String(decoding: $0, as: UTF8.self) }
        }
        let changed = mine.filter { key, value in text(key, value) != text(key, theirs[key]) }
        guard !changed.isEmpty,
            let data = try? JSONSerialization.data(withJSONObject: changed, options: [.sortedKeys])
        else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
