@testable import XMPP

private let sessionKey = AdHocSessionKey(componentSecret: "the fuzz target's own secret")
private let requester = try? JID("alice@example.org/phone")

/// The input is a hostile ad-hoc session state (the hidden field of a stage's form): it must never open
/// (no one forges the MAC) and never trap. Read as a body behind a valid MAC (as if the key had
/// leaked), it must decode or be refused without a trap, and what decodes must read back from its own
/// sealed field.
func fuzzAdHocSession(_ input: [UInt8]) {
    guard let requester else { return }
    let text = String(decoding: input, as: UTF8.self)
    require(
        AdHocSessionState(
            opening: text, key: sessionKey, sessionID: "session", node: "node", owner: requester, now: 0) == nil,
        "a session state that no one sealed opened")
    guard let session = AdHocSessionState.decode(input), session.expires > 0,
        let sealed = session.sealed(key: sessionKey, sessionID: "session", node: "node", owner: requester)
    else { return }
    let reopened = AdHocSessionState(
        opening: sealed, key: sessionKey, sessionID: "session", node: "node", owner: requester,
        now: session.expires - 1)
    require(reopened == session, "a session did not read back from its own field")
}
