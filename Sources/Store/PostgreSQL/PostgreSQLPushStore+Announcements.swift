public import PostgreSQL
import Sealing
import SQLCore
import SQLite

/// What the instances sharing a PostgreSQL store tell each other, through it: the due times its
/// triggers announce (`apush_due`: a window's end, a retry's time, a lease's) and the messages an
/// instance passes to the others (`apush_peers`). Each is heard on a `Listener` of its own.
///
/// Anyone who may connect to the database may LISTEN and NOTIFY on any channel, without a right on
/// the schema: every notification is signed, and one that does not verify is dropped unread
/// (`rejected`). The database signs them (`notify_signed`, migration 9), with HMAC-SHA256 under the
/// store's `notificationKey`, which only the store's own sessions hold (the session setting
/// `apush.notification_key`, set on each connection of the pool): a notification is
/// `<64 hex digits of HMAC(channel ␠ body)> ␠ <body>`. The MAC binds the channel, so a message cannot
/// be moved to another. A valid notification replayed is harmless: a due time only wakes a loop to look
/// at the store (and the listener hands on one batch per `dueSpacing`), and an answer is taken
/// only by the request of its id, which is never used twice (ComponentConnection).
extension PostgreSQLPushStore {
    static let dueChannel = "apush_due"
    static let peerChannel = "apush_peers"
    /// The label of the key derived from the component's secret: no other use of the secret shares it.
    static let notificationKeyLabel = "apush-component PostgreSQL notifications"
    /// The session setting `notify_signed` reads the key from (its HMAC pads, in hex).
    static let notificationKeySetting = "apush.notification_key"
    /// At most one batch of due times is announced per spacing: a flood of them (signed or not) wakes
    /// the loop at most 20 times a second. Messages to the instances need none: each is handed on
    /// alone, and its latency matters (an answer awaited), so a batch would only delay it.
    static let dueSpacing: Duration = .milliseconds(50)

    /// After any (re)connection `announce` hears `Timestamp.min`: announcements made meanwhile were
    /// lost, and anything may be due.
    public func watchDueWork(
        _ announce: @escaping @Sendable (Timestamp) -> Void, rejected: @escaping @Sendable () -> Void
    ) throws -> (any StoreWatch)? {
        let key = notificationKey
        return try Listener(
            conninfo: conninfo, channel: Self.dueChannel, reconnectInterval: reconnectInterval,
            spacing: Self.dueSpacing, connected: { announce(.min) },
            heard: { payloads in
                let bodies = Self.verified(payloads, channel: Self.dueChannel, key: key, rejected: rejected)
                if let earliest = Self.earliestDue(bodies) { announce(earliest) }
            })
    }

    /// The earliest due time announced; a damaged payload is ignored.
    static func earliestDue(_ payloads: [String]) -> Timestamp? {
        payloads.lazy.compactMap { Timestamp($0) }.min()
    }

    public func tellPeers(_ message: String) async throws {
        guard message.utf8.count <= peerMessageLimit else {
            throw StoreCapacityError(collection: "message to the other instances (bytes)", limit: peerMessageLimit)
        }
        try await run { connection in
            try connection.execute("SELECT notify_signed($1, $2)", [.text(Self.peerChannel), .text(message)])
        }
    }

    public func watchPeers(
        _ hear: @escaping @Sendable (String) -> Void, listening: @escaping @Sendable () -> Void,
        rejected: @escaping @Sendable () -> Void
    ) throws -> (any StoreWatch)? {
        let key = notificationKey
        return try Listener(
            conninfo: conninfo, channel: Self.peerChannel, reconnectInterval: reconnectInterval,
            connected: listening,
            heard: { payloads in
                Self.verified(payloads, channel: Self.peerChannel, key: key, rejected: rejected).forEach(hear)
            })
    }

    /// The bodies of the payloads signed with `key` for `channel`; `rejected` is called for each other.
    static func verified(
        _ payloads: [String], channel: String, key: SharedKey, rejected: @Sendable () -> Void
    ) -> [String] {
        payloads.compactMap { payload in
            let body = verifiedBody(payload, channel: channel, key: key)
            if body == nil { rejected() }
            return body
        }
    }

    /// The body of a payload signed with `key` for `channel`, or nil.
    static func verifiedBody(_ payload: String, channel: String, key: SharedKey) -> String? {
        let bytes = Array(payload.utf8)
        let macDigits = 2 * SharedKey.macLength
        guard bytes.count > macDigits, bytes[macDigits] == UInt8(ascii: " "),
            let mac = hexBytes(bytes[..<macDigits])
        else { return nil }
        let body = bytes[(macDigits + 1)...]
        guard key.authenticates(mac, of: Array(channel.utf8) + [UInt8(ascii: " ")] + body) else { return nil }
        return String(decoding: body, as: UTF8.self)
    }

    /// Lower-case hex digits (what `encode(…, 'hex')` writes) as bytes; nil for anything else.
    private static func hexBytes(_ digits: ArraySlice<UInt8>) -> [UInt8]? {
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The key's pads in hex, as `notify_signed` reads them from the session setting.
    static func notificationKeyValue(_ key: SharedKey) -> String {
        let (inner, outer) = key.hmacPads
        return hex(inner + outer)
    }

    /// Lower-case hex digits, as `encode(…, 'hex')` writes them.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
    }
}

extension Listener: StoreWatch {}
