import Foundation
import Testing

@testable import Store

@Suite struct PushModelsTests {
    private func registration(calls: CallsMode, wantsReads: Bool) -> Registration {
        Registration(
            id: 1, domain: "example.org", token: "t", pushModule: "fcm", account: nil, deviceKey: [1],
            calls: calls, wantsReads: wantsReads, collapseKey: [2], createdAt: 0)
    }

    @Test(arguments: [
        // calls, wantsReads, takesMessages, takesCalls, takesReads
        (CallsMode.none, false, true, false, false),
        (.none, true, true, false, true),
        (.also, false, true, true, false),
        (.also, true, true, true, true),
        // A PushKit token takes calls and nothing else, even if reads were asked for.
        (.only, false, false, true, false),
        (.only, true, false, true, false),
    ])
    func callsModeDecidesWhatARegistrationTakes(
        calls: CallsMode, wantsReads: Bool, messages: Bool, takesCalls: Bool, reads: Bool
    ) {
        let registration = registration(calls: calls, wantsReads: wantsReads)
        #expect(registration.takesMessages == messages)
        #expect(registration.takesCalls == takesCalls)
        #expect(registration.takesReads == reads)
    }

    @Test func callsModeRawValuesAreTheStoredNames() {
        #expect(CallsMode.allCases.map(\.rawValue) == ["none", "also", "only"])
    }

    @Test func newRegistrationHasNoHistory() {
        let registration = registration(calls: .none, wantsReads: false)
        #expect(registration.lastPushAt == nil && registration.lastError == nil)
        #expect(registration.lastErrorAt == nil && registration.lastWakeAt == nil)
        #expect(registration.pushCount == 0 && registration.errorCount == 0)
    }

    @Test func newChatStateIsEmptyWithTheDefaultWindow() {
        let state = ChatState(registrationID: 1, chat: "bob@example.org")
        #expect(state.count == 0)
        #expect(state.lastMessageAt == nil && state.windowEndsAt == nil && state.held == nil)
        #expect(state.windowMilliseconds == 10_000)
        #expect(!state.noticedSinceRead && state.lastReadPushAt == nil)
    }

    @Test(arguments: [
        HeldNotice(from: "bob@example.org", id: "m1", groupchat: false, mention: false, at: 1),
        HeldNotice(from: "room@muc.example.org/carol", id: nil, groupchat: true, mention: true, at: 1_700_000_000_000),
    ])
    func heldNoticeSurvivesJSON(notice: HeldNotice) throws {
        let decoded = try JSONDecoder().decode(HeldNotice.self, from: JSONEncoder().encode(notice))
        #expect(decoded == notice)
    }

    @Test func heldNoticeJSONCarriesNoMessageText() throws {
        let notice = HeldNotice(from: "bob@example.org", id: "m1", groupchat: false, mention: true, at: 5)
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(notice)) as? [String: Any]
        #expect(Set(object?.keys ?? [:].keys) == ["from", "id", "groupchat", "mention", "at"])
    }

    @Test func newRetryItemHasNoIDYet() {
        let item = RetryItem(
            registrationID: 1, summary: "{}", kind: "wake", collapseChat: nil, attempts: 0,
            nextAt: 1, deadline: 2)
        #expect(item.id == 0)
    }

    @Test func emptyFilterMatchesEverything() {
        let filter = RegistrationFilter()
        #expect(filter.account == nil && filter.domain == nil && filter.pushModule == nil)
    }
}
