import Sealing

@testable import Store

private let notificationKey = SharedKey(
    secret: "the fuzz target's own secret", label: PostgreSQLPushStore.notificationKeyLabel)

/// The input is a hostile notification on a shared store's channel (any role that may connect may send
/// one): it must never verify (no one forges the MAC) and never trap. Signed with the key, as the
/// database signs it, the same text must verify and give back exactly itself as the body.
func fuzzStoreNotification(_ input: [UInt8]) {
    let payload = String(decoding: input, as: UTF8.self)
    for channel in [PostgreSQLPushStore.dueChannel, PostgreSQLPushStore.peerChannel] {
        require(
            PostgreSQLPushStore.verifiedBody(payload, channel: channel, key: notificationKey) == nil,
            "a notification no one signed verified")
        let signed =
            PostgreSQLPushStore.hex(notificationKey.mac(Array("\(channel) \(payload)".utf8))) + " " + payload
        require(
            PostgreSQLPushStore.verifiedBody(signed, channel: channel, key: notificationKey) == payload,
            "a signed notification did not give back its body")
    }
}
