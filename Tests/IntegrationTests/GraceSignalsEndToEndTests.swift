import Sealing
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

@testable import APush

/// What the component learns of an account's other sessions from each bridged server (grace): a desktop's
/// presence stripped to available or not, its activity, and never the session of the device it pushes.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct GraceSignalsEndToEndTests {
    @Test(arguments: PushTestbed.bridgedServers)
    func theComponentFollowsTheDesktopsPresenceAndActivityAndNeverCountsThePhone(
        on server: PushTestbed.Server
    ) async throws {
        try await PushTestbed.with(server) { bed in
            let module = try #require(bed.module)
            let alice = "alice@localhost"
            func available() -> Set<String> {
                module.service.accountSessions.withLock { $0.accounts[alice]?.available ?? [] }
            }
            func lastActivity() -> Timestamp? {
                module.service.accountSessions.withLock { $0.lastActivity(of: alice) }
            }
            try await bed.enableDevice(token: "token-grace")

            // A phone that enabled push and stays online, available and chatting: the device pushed to.
            let phone = try await bed.client("alice", resource: "phone-live", presence: false)
            let form = DataForm(
                type: .submit, formType: Namespace.pubsubPublishOptions,
                fields: [
                    .value("pushModule", "fcm-test"),
                    .value("apushEncryptionPublicKey", Base64.encode(KeyPair.generate().publicKey)),
                ])
            try await phone.enablePush(service: PushTestbed.componentJID, node: "token-live", publishOptions: form)
            try phone.sendRaw("<presence/>")
            try phone.sendRaw(
                "<message to='bob@localhost' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>"
            )

            let desktop = try await bed.client("alice", resource: "desktop")
            try await waitUntil("the desktop counts as available") { available() == ["desktop"] }
            #expect(lastActivity() == nil)

            try desktop.sendRaw("<presence><show>away</show><status>in a meeting</status></presence>")
            try await waitUntil("the desktop away is not available") { available().isEmpty }
            try desktop.sendRaw("<presence><show>chat</show></presence>")
            try await waitUntil("the desktop free to chat is available") { available() == ["desktop"] }
            try desktop.sendRaw("<presence type='unavailable'/>")
            try await waitUntil("the desktop unavailable is not") { available().isEmpty }

            try desktop.sendRaw(
                "<message to='bob@localhost' type='chat'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>"
            )
            try await waitUntil("composing on the desktop is activity") { lastActivity() != nil }
            #expect(!available().contains("phone-live"))
            await desktop.close()
            await phone.close()
        }
    }

    /// A desktop that leaves without an unavailable presence (its connection dropped) ends its hold once
    /// the server drops the session.
    @Test(arguments: PushTestbed.bridgedServers)
    func aDesktopThatDropsStopsCounting(on server: PushTestbed.Server) async throws {
        try await PushTestbed.with(server) { bed in
            let module = try #require(bed.module)
            func available() -> Set<String> {
                module.service.accountSessions.withLock { $0.accounts["alice@localhost"]?.available ?? [] }
            }
            try await bed.enableDevice(token: "token-grace")
            let desktop = try await bed.client("alice", resource: "desktop")
            try await waitUntil("the desktop counts as available") { available() == ["desktop"] }
            desktop.drop()
            try await waitUntil("the dropped desktop no longer counts") { available().isEmpty }
        }
    }
}
