import Store
import Testing

@testable import APush

@Suite struct OutgoingPushTests {
    static let notice = HeldNotice(
        from: "bob@localhost", id: "s-1", groupchat: false, mention: false,
        at: 1_764_430_000_000)

    @Test func aMessageNamesItsChatAndCollapsesUnderIt() {
        let push = OutgoingPush.message(
            account: "alice@localhost", chat: "bob@localhost", notice: Self.notice,
            count: 3, badge: 5, generation: 7, policy: PushPolicy())
        #expect(push.kind == .message)
        #expect(push.generation == 7)
        #expect(push.collapseChat == "bob@localhost")
        #expect(
            push.json
                == #"{"v":2,"kind":"message","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost","count":3,"badge":5,"id":"s-1","ts":1764430000}"#
        )
    }

    @Test func withTheSenderHiddenItSaysOnlyThatThereIsSomething() {
        var policy = PushPolicy()
        policy.sender = .hidden
        let push = OutgoingPush.message(
            account: "alice@localhost", chat: "bob@localhost", notice: Self.notice,
            count: 3, badge: nil, generation: 7, policy: policy, missedCall: .init(sid: "c1", media: ["audio"]))
        #expect(
            push.json
                == #"{"v":2,"kind":"message","account":"alice@localhost","chat":"","count":3,"missed":true,"ts":1764430000}"#
        )
        // Its collapse tag still keeps one notice per chat on the device.
        #expect(push.collapseChat == "bob@localhost")
    }

    @Test func aStoredRetryKeepsTheGenerationItWasDecidedAt() {
        let retry = RetryItem(
            registrationID: 1, summary: "{}", kind: "message", collapseChat: "bob@localhost", attempts: 1,
            nextAt: 0, deadline: 0, generation: 5)
        #expect(OutgoingPush(retry: retry, account: "")?.generation == 5)
    }

    @Test func aStoredRetryOfAnUnknownKindIsNoPush() {
        let retry = RetryItem(
            registrationID: 1, summary: "{}", kind: "fax", collapseChat: nil, attempts: 0, nextAt: 0,
            deadline: 0)
        #expect(OutgoingPush(retry: retry, account: "") == nil)
    }

    @Test(arguments: [(Summary.Kind.message, String?.none), (.call, "voip"), (.read, "read"), (.wake, "wake")])
    func theApushKindIsAbsentForAMessage(kind: Summary.Kind, apushKind: String?) {
        #expect(
            OutgoingPush(summary: Summary(kind: kind, account: "a", ts: 0), collapseChat: nil).apushKind == apushKind)
    }
}
