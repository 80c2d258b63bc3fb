import Testing

@testable import APush

@Suite struct PushEventTests {
    @Test(arguments: [
        (
            PushEvent.message(
                MessageNotice(chat: "bob@localhost", from: "bob@localhost", groupchat: false, mention: false)),
            "message"
        ),
        (.call(CallNotice(chat: "bob@localhost", from: "bob@localhost/laptop", sid: "s1", media: ["audio"])), "call"),
        (.callEnded(sid: "s1", by: "bob@localhost", answeredElsewhere: false), "call-ended"),
        (.read(chat: "bob@localhost"), "read"),
        (.wake, "wake"),
    ])
    func eachKindHasTheNameItIsCountedUnder(_ event: PushEvent, name: String) {
        #expect(event.kindName == name)
        #expect(Statistic.event(event).name == "events." + name)
    }
}
