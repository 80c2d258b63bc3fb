import Foundation

/// The key that authenticates ad-hoc sessions' states. Every instance of one component JID derives the
/// same key from the XEP-0114 secret they must share, so a session goes on wherever its next stage
/// lands; the label keeps this key apart from any other use of the secret, and reveals nothing of it.
public struct AdHocSessionKey: Sendable {
    let bytes: [UInt8]

    public init(componentSecret: String) {
        bytes = HMACSHA256.mac(key: Array(componentSecret.utf8), message: Array("apush-component ad-hoc sessions".utf8))
    }
}

/// What a multi-stage session remembers, travelling in a hidden field of each stage's form
/// (`AdHocSessions.stateField`): the states the handlers asked to remember, the fields of the form the
/// stage showed, and the wall-clock time it expires, followed by HMAC-SHA256 over all of that, the
/// session id, the command's node and the requester's full JID. Nothing is kept on any instance.
///
/// The requester can read the states (they are authenticated, not encrypted): handlers keep there
/// only what the requester chose or may see, never a secret. A stage's field opens again until it
/// expires, on any instance (a replay): that gives the requester nothing it could not get by starting
/// the command again, since access is checked on every stage and the states hold only what its own
/// submissions produced.
struct AdHocSessionState: Equatable {
    /// Longer fields are refused before anything is decoded; a session whose field would be longer
    /// cannot be kept.
    static let maximumLength = 4096
    private static let version: UInt8 = 2
    /// Version, expiry, the count of states and the count of fields.
    private static let minimumBodyLength = 1 + 8 + 2 + 2

    /// Milliseconds since 1970 (UTC): instances' clocks agree on it where a monotonic clock would not.
    var expires: UInt64
    /// One for each stage answered so far, after the empty one stage 0 starts with.
    var states: [[String: String]]
    /// The variables of the form the last stage showed: a submitted form answers that form, so one
    /// with other fields was meant for another stage (a requester that kept an earlier stage's id).
    var fields: [String]

    /// The stage the next request runs.
    var stage: Int { states.count - 1 }

    /// Where a stage's state keeps the actions that stage offered; handlers' names never start with `@`.
    private static let offeredActionsName = "@actions"

    /// The actions the last stage offered (besides cancel), its default first; `complete` when it
    /// offered none, as XEP-0050 reads an empty `<actions/>`.
    var offeredActions: [AdHocAction] {
        let offered = (states.last?[Self.offeredActionsName] ?? "").split(separator: " ").compactMap {
            AdHocAction(rawValue: String($0))
        }
        return offered.isEmpty ? [.complete] : offered
    }

    /// The state the last stage's handler asked to remember.
    var handlerState: [String: String] {
        var state = states.last ?? [:]
        state[Self.offeredActionsName] = nil
        return state
    }

    /// Remembers a stage answered with `state`, offering `actions`.
    mutating func append(_ state: [String: String], offering actions: [AdHocAction]) {
        var state = state
        state[Self.offeredActionsName] = actions.map(\.rawValue).joined(separator: " ")
        states.append(state)
    }

    /// The field's value as the requester sees it, or nil when it would be longer than `maximumLength`.
    func sealed(key: AdHocSessionKey, sessionID: String, node: String, owner: JID) -> String? {
        var body: [UInt8] = [Self.version]
        body.appendBigEndian(expires, width: 8)
        guard body.appendLength(states.count) else { return nil }
        for state in states {
            guard body.appendLength(state.count) else { return nil }
            for (name, value) in state.sorted(by: { $0.key < $1.key }) {
                guard body.appendString(name), body.appendString(value) else { return nil }
            }
        }
        guard body.appendLength(fields.count) else { return nil }
        for field in fields {
            guard body.appendString(field) else { return nil }
        }
        let mac = Self.mac(body, key: key, sessionID: sessionID, node: node, owner: owner)
        let text = Data(body + mac).base64EncodedString()
        return text.utf8.count <= Self.maximumLength ? text : nil
    }

    /// The session `text` carries, or nil when it is too long, not ours, of another session, node or
    /// requester, tampered with, or expired at `now`.
    init?(opening text: String, key: AdHocSessionKey, sessionID: String, node: String, owner: JID, now: UInt64) {
        guard let session = Self(opening: text, key: key, sessionID: sessionID, node: node, owner: owner),
            session.expires > now
        else { return nil }
        self = session
    }

    /// The session `text` carries, expired or not, or nil when it is too long, not ours, of another
    /// session, node or requester, or tampered with. The MAC is checked, in constant time, before the
    /// body is read.
    init?(opening text: String, key: AdHocSessionKey, sessionID: String, node: String, owner: JID) {
        guard text.utf8.count <= Self.maximumLength, let data = Data(base64Encoded: text),
            data.count >= Self.minimumBodyLength + HMACSHA256.length
        else { return nil }
        let bytes = [UInt8](data)
        let body = Array(bytes.dropLast(HMACSHA256.length))
        guard
            HMACSHA256.equal(
                Array(bytes.suffix(HMACSHA256.length)),
                Self.mac(body, key: key, sessionID: sessionID, node: node, owner: owner)),
            let session = Self.decode(body)
        else { return nil }
        self = session
    }

    init(expires: UInt64, states: [[String: String]], fields: [String] = []) {
        self.expires = expires
        self.states = states
        self.fields = fields
    }

    private static func mac(_ body: [UInt8], key: AdHocSessionKey, sessionID: String, node: String, owner: JID)
        -> [UInt8]
    {
        var message = body
        for part in [sessionID, node, owner.description] {
            message.appendBigEndian(UInt64(part.utf8.count), width: 8)
            message.append(contentsOf: part.utf8)
        }
        return HMACSHA256.mac(key: key.bytes, message: message)
    }

    /// Reads a body this code wrote; still bounded and trap-free, so a leaked key gives no crash.
    static func decode(_ body: [UInt8]) -> AdHocSessionState? {
        var reader = ByteReader(bytes: body)
        guard reader.integer(width: 1) == UInt64(version), let expires = reader.integer(width: 8),
            let stateCount = reader.integer(width: 2), stateCount >= 1
        else { return nil }
        var states: [[String: String]] = []
        for _ in 0..<stateCount {
            guard let pairCount = reader.integer(width: 2) else { return nil }
            var state: [String: String] = [:]
            for _ in 0..<pairCount {
                guard let name = reader.string(), let value = reader.string() else { return nil }
                state[name] = value
            }
            states.append(state)
        }
        guard let fieldCount = reader.integer(width: 2) else { return nil }
        var fields: [String] = []
        for _ in 0..<fieldCount {
            guard let field = reader.string() else { return nil }
            fields.append(field)
        }
        guard reader.isAtEnd else { return nil }
        return AdHocSessionState(expires: expires, states: states, fields: fields)
    }
}
