import Foundation
import Store
import XMPP

@testable import APush
@testable import XMLStream

/// The input is one stanza. A publish goes through `IncomingPublish`, anything else straight to the
/// classifier as if it were the notification; each event becomes the summaries the push path would
/// seal, and each of those must be JSON that reads back to the same values.
private let component = try! JID("apush.localhost")

func fuzzPublish(_ input: [UInt8]) {
    guard let stanza = parsedElement(input) else { return }
    let notification =
        (try? IncomingPublish(iq: stanza, servedDomains: ["localhost"], componentJID: component))?.notification
        ?? stanza
    let classified = EventClassifier.classify(notification)
    let account = classified.account ?? "alice@localhost"
    let ts: Int64 = 1_800_000_000

    switch classified.event {
    case .message(let notice):
        let held = HeldNotice(
            from: notice.from, id: notice.id, groupchat: notice.groupchat, mention: notice.mention,
            at: ts * 1000)
        for sender in PushPolicy.SenderMode.allCases {
            var policy = PushPolicy()
            policy.sender = sender
            let push = OutgoingPush.message(
                account: account, chat: notice.chat, notice: held, count: 1, badge: 2, generation: 1, policy: policy)
            let fields = readBack(push.json)
            require(fields["account"] as? String == account, "account did not survive the summary")
            require(fields["badge"] as? Int == 2, "the badge did not survive the summary")
            if sender != .hidden {
                require(fields["chat"] as? String == notice.chat, "chat did not survive the summary")
                require(fields["from"] as? String == notice.from, "from did not survive the summary")
                require(fields["id"] as? String == notice.id, "id did not survive the summary")
            }
        }
    case .call(let call):
        let summary = Summary(
            kind: .call, account: account, chat: call.chat, from: call.from,
            call: .init(sid: call.sid, media: call.media), ts: ts)
        let callFields = readBack(summary.json)["call"] as? [String: Any]
        require(callFields?["sid"] as? String == call.sid, "the call sid did not survive the summary")
        require(callFields?["media"] as? [String] == call.media, "the call media did not survive the summary")
    case .callEnded(let sid, _, _):
        let held = HeldNotice(from: "", id: nil, groupchat: false, mention: false, at: ts * 1000)
        let push = OutgoingPush.message(
            account: account, chat: "", notice: held, count: 1, badge: nil, generation: 1, policy: PushPolicy(),
            missedCall: .init(sid: sid, media: []))
        require(
            (readBack(push.json)["call"] as? [String: Any])?["sid"] as? String == sid,
            "the missed call's sid did not survive the summary")
    case .read(let chat):
        require(
            readBack(Summary(kind: .read, account: account, chat: chat, ts: ts).json)["chat"] as? String == chat,
            "the read chat did not survive the summary")
    case .wake:
        _ = readBack(Summary(kind: .wake, account: account, ts: ts).json)
    }
}

/// The element the input is, parsed under the stream's rules and limits, or nil.
func parsedElement(_ input: [UInt8]) -> Element? {
    try? StreamParser(limits: StreamLimits(), mode: .document).parseDocument(input)
}

/// The summary's fields, as an App Server's JSON reader sees them; padded the way it is sealed.
private func readBack(_ json: String) -> [String: Any] {
    let padded = Summary.padded(json, bucket: 128, limit: 4096)
    let object = try? JSONSerialization.jsonObject(with: Data(padded)) as? [String: Any]
    require(object != nil, "the summary is not a JSON object")
    return object ?? [:]
}
