import Logging
import Store

/// The sealed plaintext (docs/wire-contract.md, Output): compact JSON, keys in a fixed order, never a message's text.
struct Summary: Sendable, Equatable {
    enum Kind: String, Sendable { case message, call, read, wake }

    struct Call: Sendable, Equatable {
        var sid: String
        var media: [String]
    }

    var kind: Kind
    var account: String
    var chat: String?
    var groupchat = false
    var from: String?
    var count: Int?
    /// The account's unread total over its chats (`Badge`), capped at `maximumBadge` when written.
    var badge: Int?
    var mention = false
    var missed = false
    var id: String?
    var call: Call?
    var test = false
    /// Unix seconds of the event.
    var ts: Int64

    var json: String {
        var writer = JSONObjectWriter()
        writer.add("v", 2)
        writer.add("kind", kind.rawValue)
        writer.add("account", account)
        if let chat { writer.add("chat", chat) }
        if groupchat { writer.add("groupchat", true) }
        if let from { writer.add("from", from) }
        if let count { writer.add("count", count) }
        if let badge { writer.add("badge", min(badge, Self.maximumBadge)) }
        if mention { writer.add("mention", true) }
        if missed { writer.add("missed", true) }
        if let id { writer.add("id", id) }
        if let call {
            var callWriter = JSONObjectWriter()
            callWriter.add("sid", call.sid)
            callWriter.add("media", call.media)
            writer.addRaw("call", callWriter.finish())
        }
        if test { writer.add("test", true) }
        writer.add("ts", Int(ts))
        return writer.finish()
    }

    /// The largest badge a summary carries: an icon shows no more.
    static let maximumBadge = 9_999

    /// JSON padded with trailing spaces to a multiple of `bucket` bytes (still valid JSON), so the
    /// envelope's length tells Apple and Google less; never past the envelope's limit.
    static func padded(_ json: String, bucket: Int, limit: Int) -> [UInt8] {
        var bytes = Array(json.utf8)
        guard bucket > 0 else { return bytes }
        let target = min(limit, (bytes.count + bucket - 1) / bucket * bucket)
        if bytes.count < target {
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: target - bytes.count))
        }
        return bytes
    }
}
