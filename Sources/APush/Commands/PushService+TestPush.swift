import Store
import XMPP

extension PushService {
    enum TestKind: String, CaseIterable, Sendable {
        case message, call, read, wake
    }

    /// Sends a test push of `kind` to every registration of the account that takes it, past policy,
    /// coalescing and rate limits; the component's JID is the chat, and the summary says `"test":true`.
    func sendTest(_ kind: TestKind, account: JID, componentJID: JID, via upstream: Upstream) async throws
        -> [(Registration, UpstreamOutcome)]
    {
        let at = now()
        let chat = componentJID.description
        let registrations = try await store.registrations(
            matching: RegistrationFilter(account: account.bare.description, domain: account.domainpart),
            limit: 100, offset: 0)
        var results: [(Registration, UpstreamOutcome)] = []
        for registration in registrations {
            var summary = Summary(kind: .message, account: account.bare.description, chat: chat, ts: at / 1000)
            summary.test = true
            var collapseChat: String?
            switch kind {
            case .message:
                guard registration.takesMessages else { continue }
                summary.from = chat
                summary.count = 1
                collapseChat = chat
            case .call:
                guard registration.takesCalls else { continue }
                summary.kind = .call
                summary.from = chat
                summary.call = .init(sid: "test-\(at)", media: ["audio"])
            case .read:
                guard registration.takesReads else { continue }
                summary.kind = .read
            case .wake:
                guard registration.takesMessages else { continue }
                summary.kind = .wake
                summary.chat = nil
            }
            statistics.count(.testPush(kind))
            let push = await delivery.storedInOutbox(
                OutgoingPush(summary: summary, collapseChat: collapseChat), registrationID: registration.id, at: at)
            let outcome = await delivery.deliver(push, to: registration, via: upstream, at: at)
            results.append((registration, outcome))
        }
        return results
    }
}
