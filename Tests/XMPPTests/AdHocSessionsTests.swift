import Foundation
import Synchronization
import Testing
import XMLStream

@testable import XMPP

@Suite struct AdHocSessionsTests {
    static let alice = try! JID("alice@example.org/phone")
    static let aliceLaptop = try! JID("alice@example.org/laptop")
    static let admin = try! JID("admin@example.org/desk")

    static let key = AdHocSessionKey(componentSecret: "shared secret")

    /// Whether `alice` may run the "revocable" command; flipped by a test between stages.
    private let aliceAllowed = AccessFlag()
    /// The wall clock the sessions read, in milliseconds since 1970; a test moves it.
    private let clock = TestClock()

    /// One instance of the component: every call gives another, sharing only the key.
    private func sessions(key: AdHocSessionKey = Self.key) -> AdHocSessions {
        let flag = aliceAllowed
        return AdHocSessions(
            commands: [
                AdHocCommand(node: "single", name: "Single", isAllowed: { _ in true }) { request in
                    .completed(AdHocNote(.info, "done for \(request.requester.bare)"))
                },
                AdHocCommand(node: "admin-only", name: "Admin", isAllowed: { $0.bare == Self.admin.bare }) { _ in
                    .completed(AdHocNote(.info, "admin done"))
                },
                AdHocCommand(node: "wizard", name: "Wizard", isAllowed: { _ in true }, handler: Self.wizard),
                AdHocCommand(
                    node: "revocable", name: "Revocable", isAllowed: { _ in flag.value }, handler: Self.wizard),
            ], key: key, lifetime: .seconds(600), now: { [clock] in clock.milliseconds })
    }

    /// Stage 0 asks for a name, stage 1 asks to confirm it, stage 2 completes with it.
    @Sendable static func wizard(_ request: AdHocRequest) async throws -> AdHocResponse {
        switch request.stage {
        case 0:
            return .next(
                DataForm(type: .form, title: "Name", fields: [DataForm.Field(variable: "name")]),
                actions: [.next])
        case 1:
            let name = request.form?.value("name") ?? ""
            return .next(
                DataForm(type: .form, title: "Confirm \(name)"), actions: [.prev, .complete],
                state: ["name": name])
        default:
            return .completed(AdHocNote(.info, "hello \(request.state["name"] ?? "?")"))
        }
    }

    private func command(
        _ node: String, action: AdHocAction? = nil, sessionID: String? = nil,
        form: DataForm? = nil
    ) -> Element {
        var element = Element(
            "command", namespace: Namespace.commands,
            ["node": node, "action": action?.rawValue, "sessionid": sessionID])
        if let form { element.append(form.element) }
        return element
    }

    private func expectError(
        _ condition: StanzaError.Condition, application: String? = nil,
        _ body: () async throws -> Element
    ) async {
        do {
            let answer = try await body()
            Issue.record("expected \(condition), got \(answer.serialized())")
        } catch let error as StanzaError {
            #expect(error.condition == condition)
            #expect(error.applicationCondition?.name == application)
            if application != nil { #expect(error.applicationCondition?.namespace == Namespace.commands) }
        } catch {
            Issue.record("expected a StanzaError, got \(error)")
        }
    }

    @Test func theListHoldsOnlyCommandsTheRequesterMayRun() {
        let sessions = sessions()
        aliceAllowed.value = false
        #expect(sessions.available(to: Self.alice).map(\.node) == ["single", "wizard"])
        #expect(sessions.available(to: Self.admin).map(\.node) == ["single", "admin-only", "wizard"])
        aliceAllowed.value = true
        #expect(sessions.available(to: Self.alice).map(\.node) == ["single", "wizard", "revocable"])
    }

    @Test func aSingleStageCommandCompletesAtOnce() async throws {
        let answer = try await sessions().execute(command("single"), from: Self.alice)
        #expect(answer.name == "command" && answer.namespace == Namespace.commands)
        #expect(answer[attribute: "status"] == "completed")
        #expect(answer[attribute: "node"] == "single")
        #expect(answer[attribute: "sessionid"]?.isEmpty == false)
        #expect(answer.findString("note#") == "done for alice@example.org")
        #expect(answer.findString("note@type") == "info")
        #expect(answer.child("actions") == nil)
    }

    @Test func aMultiStageCommandGoesForwardBackAndCompletes() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        #expect(first[attribute: "status"] == "executing")
        #expect(first.findString("actions@execute") == "next")
        #expect(first.check(#"{jabber:x:data}x/title"#))
        let id = try #require(first[attribute: "sessionid"])

        let name = DataForm(type: .submit, fields: [.value("name", "Zoë")])
        let second = try await sessions.execute(
            command("wizard", action: .next, sessionID: id, form: name),
            from: Self.alice)
        #expect(second[attribute: "status"] == "executing")
        let secondID = try #require(second[attribute: "sessionid"])
        #expect(secondID != id, "each stage's id carries that stage")
        #expect(second.findString("{jabber:x:data}x/title#") == "Confirm Zoë")
        #expect(second.findElements("actions/*").map(\.name) == ["prev", "complete"])

        let back = try await sessions.execute(command("wizard", action: .prev, sessionID: secondID), from: Self.alice)
        #expect(back.findString("{jabber:x:data}x/title#") == "Name", "prev shows the first stage again")
        let backID = try #require(back[attribute: "sessionid"])
        let ada = DataForm(type: .submit, fields: [.value("name", "Ada")])
        let again = try await sessions.execute(
            command("wizard", action: .next, sessionID: backID, form: ada), from: Self.alice)
        #expect(again.findString("{jabber:x:data}x/title#") == "Confirm Ada")

        let againID = try #require(again[attribute: "sessionid"])
        let done = try await sessions.execute(
            command("wizard", action: .complete, sessionID: againID), from: Self.alice)
        #expect(done[attribute: "status"] == "completed")
        #expect(done.findString("note#") == "hello Ada")
    }

    @Test func aSessionGoesOnOnAnotherInstanceWithTheSameKey() async throws {
        let (first, second, third) = (sessions(), sessions(), sessions())
        let id = try #require(try await first.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        let name = DataForm(type: .submit, fields: [.value("name", "Zoë")])
        let next = try await second.execute(
            command("wizard", action: .next, sessionID: id, form: name), from: Self.alice)
        #expect(next[attribute: "status"] == "executing")
        let nextID = try #require(next[attribute: "sessionid"])
        let done = try await third.execute(command("wizard", action: .complete, sessionID: nextID), from: Self.alice)
        #expect(done.findString("note#") == "hello Zoë")
    }

    @Test func anotherKeyRefusesTheSession() async throws {
        let id = try #require(try await sessions().execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        let other = sessions(key: AdHocSessionKey(componentSecret: "another secret"))
        await expectError(.badRequest, application: "bad-sessionid") {
            try await other.execute(command("wizard", action: .next, sessionID: id), from: Self.alice)
        }
    }

    @Test func sessionsStartedAtOnceHaveTheirOwnIDs() async throws {
        let sessions = sessions()
        var ids: Set<String> = []
        for _ in 0..<3 {
            ids.insert(
                try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"]))
        }
        #expect(ids.count == 3)
    }

    @Test func cancelAnswersCanceled() async throws {
        let sessions = sessions()
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        let canceled = try await sessions.execute(command("wizard", action: .cancel, sessionID: id), from: Self.alice)
        #expect(canceled[attribute: "status"] == "canceled")
        #expect(canceled[attribute: "sessionid"] == id)
        #expect(canceled.child("actions") == nil)
    }

    /// Nothing is kept, so nothing is forgotten: an id opens until it expires, after `complete` and
    /// `cancel` too, and re-runs its stage (for the same requester only, access checked again).
    @Test func anIDOpensAgainUntilItExpires() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let id = try #require(first[attribute: "sessionid"])
        for name in ["Zoë", "Ada"] {
            let form = DataForm(type: .submit, fields: [.value("name", name)])
            let answer = try await sessions.execute(
                command("wizard", action: .next, sessionID: id, form: form), from: Self.alice)
            #expect(answer.findString("{jabber:x:data}x/title#") == "Confirm \(name)")
        }
        clock.milliseconds += 600_000
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", action: .next, sessionID: id), from: Self.alice)
        }
    }

    @Test func aStaleOrForeignSessionIDIsABadSessionID() async throws {
        let sessions = sessions()
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", action: .next, sessionID: "no-such-session"), from: Self.alice)
        }
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", action: .next, sessionID: id), from: Self.aliceLaptop)
        }
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("single", action: .execute, sessionID: id), from: Self.alice)
        }
        let stillThere = try await sessions.execute(command("wizard", action: .next, sessionID: id), from: Self.alice)
        #expect(stillThere[attribute: "status"] == "executing", "the owner's session survives the attempts")
    }

    @Test func anExpiredSessionIsABadSessionID() async throws {
        let sessions = sessions()
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        clock.milliseconds += 599_999
        let form = DataForm(type: .submit, fields: [.value("name", "x")])
        let next = try await sessions.execute(
            command("wizard", action: .next, sessionID: id, form: form), from: Self.alice)
        #expect(next[attribute: "status"] == "executing", "alive until its last millisecond")
        clock.milliseconds += 1
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", action: .next, sessionID: id, form: form), from: Self.alice)
        }
        let nextID = try #require(next[attribute: "sessionid"])
        let done = try await sessions.execute(command("wizard", action: .complete, sessionID: nextID), from: Self.alice)
        #expect(done[attribute: "status"] == "completed", "each stage's id lives its own lifetime")
    }

    @Test func aTamperedTruncatedOrOversizedIDIsABadSessionID() async throws {
        let sessions = sessions()
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        var bytes = try #require(Data(base64Encoded: id))
        var hostile = [
            "", "=", "not base64 at all", String(id.dropLast(4)), String(id.dropFirst(4)),
            id + "AAAA", String(repeating: "A", count: 10_000_000), String(repeating: "A", count: 4096),
            Data(bytes.prefix(bytes.count - 32)).base64EncodedString(),
        ]
        for index in [0, 9, 17, bytes.count - 1] {
            bytes[index] ^= 0x01
            hostile.append(bytes.base64EncodedString())
            bytes[index] ^= 0x01
        }
        #expect(bytes.base64EncodedString() == id)
        for candidate in hostile {
            await expectError(.badRequest, application: "bad-sessionid") {
                try await sessions.execute(command("wizard", action: .next, sessionID: candidate), from: Self.alice)
            }
        }
    }

    /// An id sealed by an independent implementation of the format (Python's hmac, as in
    /// Fuzz/Corpus/ad-hoc-session/sealed-id): the key derivation and the MAC are the documented ones.
    @Test func anIDSealedElsewhereOpens() throws {
        let id =
            "AQEjRWeJq83vAAABoxhld8AAAwAAAAAAAQAHYWNjb3VudAAPYWxpY2VAbG9jYWxob3N0AAIACG1lc3NhZ2VzAAVtdXRlZD75gLk7yGPFJoAAyqsysqeQdbK3rOIuqSGQms0XvbEp"
        let key = AdHocSessionKey(componentSecret: "fuzz")
        let owner = try JID("alice@example.org/phone")
        let session = try #require(
            AdHocSessionID(opening: id, key: key, node: "node", owner: owner, now: 1_800_000_000_000))
        #expect(
            session
                == AdHocSessionID(
                    nonce: 0x0123_4567_89ab_cdef, expires: 1_800_000_600_000,
                    states: [[:], [:], ["account": "alice@localhost"]], fields: ["messages", "muted"]))
        #expect(session.stage == 2)
        #expect(AdHocSessionID(opening: id, key: key, node: "node", owner: owner, now: 1_800_000_600_000) == nil)
    }

    /// The body is read only past its MAC, but reading it must not trap even if the key leaked.
    @Test func aMalformedBodyDecodesToNothing() throws {
        let valid = AdHocSessionID(nonce: 7, expires: 9, states: [[:], ["name": "Zoë"]], fields: ["name"])
        let sealed = try #require(valid.sealed(key: Self.key, node: "wizard", owner: Self.alice))
        let body = Array(try #require(Data(base64Encoded: sealed)).dropLast(32))
        #expect(AdHocSessionID.decode(body) == valid)
        #expect(AdHocSessionID.decode([]) == nil)
        #expect(AdHocSessionID.decode(Array(body.dropLast())) == nil, "truncated")
        #expect(AdHocSessionID.decode(body + [0]) == nil, "trailing bytes")
        #expect(AdHocSessionID.decode([2] + body.dropFirst()) == nil, "another version")
        let noStates: [UInt8] = [1] + [UInt8](repeating: 0, count: 16) + [0, 0, 0, 0]
        #expect(AdHocSessionID.decode(noStates) == nil)
        let promisesMore: [UInt8] = [1] + [UInt8](repeating: 0, count: 16) + [0xff, 0xff, 0xff, 0xff]
        #expect(AdHocSessionID.decode(promisesMore) == nil)
    }

    /// A requester that kept the first stage's id and sends it with the second stage's form would
    /// otherwise run the first stage again with the wrong form.
    @Test func anEarlierStagesIDCannotTakeALaterStagesForm() async throws {
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "survey", name: "Survey", isAllowed: { _ in true }) { request in
                    switch request.stage {
                    case 0:
                        .next(DataForm(type: .form, fields: [DataForm.Field(variable: "account")]), actions: [.next])
                    case 1: .next(DataForm(type: .form, fields: [DataForm.Field(variable: "color")]))
                    default: .completed(AdHocNote(.info, request.form?.value("color") ?? "none"))
                    }
                }
            ], key: Self.key)
        let first = try await sessions.execute(command("survey"), from: Self.alice)
        let firstID = try #require(first[attribute: "sessionid"])
        let account = DataForm(type: .submit, formType: "urn:example", fields: [.value("account", "bob@example.org")])
        let second = try await sessions.execute(
            command("survey", action: .next, sessionID: firstID, form: account), from: Self.alice)
        let color = DataForm(type: .submit, fields: [.value("color", "red")])
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(
                command("survey", action: .complete, sessionID: firstID, form: color), from: Self.alice)
        }
        let secondID = try #require(second[attribute: "sessionid"])
        let done = try await sessions.execute(
            command("survey", action: .complete, sessionID: secondID, form: color), from: Self.alice)
        #expect(done.findString("note#") == "red")
    }

    @Test func aStateTooLargeForAnIDIsAResourceConstraint() async {
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "hoarder", name: "Hoarder", isAllowed: { _ in true }) { _ in
                    .next(DataForm(type: .form), state: ["big": String(repeating: "x", count: 5000)])
                }
            ], key: Self.key)
        await expectError(.resourceConstraint) { try await sessions.execute(command("hoarder"), from: Self.alice) }
    }

    @Test func accessIsCheckedAgainOnEveryStage() async throws {
        let sessions = sessions()
        aliceAllowed.value = true
        let id = try #require(
            try await sessions.execute(command("revocable"), from: Self.alice)[attribute: "sessionid"])
        aliceAllowed.value = false
        await expectError(.forbidden) {
            try await sessions.execute(command("revocable", action: .next, sessionID: id), from: Self.alice)
        }
    }

    @Test func aCommandTheRequesterMayNotRunIsForbidden() async {
        await expectError(.forbidden) { try await sessions().execute(command("admin-only"), from: Self.alice) }
    }

    @Test func anUnknownNodeIsItemNotFound() async {
        await expectError(.itemNotFound) { try await sessions().execute(command("no-such-node"), from: Self.alice) }
        await expectError(.itemNotFound) {
            try await sessions().execute(Element("command", namespace: Namespace.commands), from: Self.alice)
        }
    }

    @Test func anUnknownActionOrAMissingSessionIsAMalformedAction() async {
        await expectError(.badRequest, application: "malformed-action") {
            try await sessions().execute(
                Element(
                    "command", namespace: Namespace.commands,
                    ["node": "wizard", "action": "jump"]), from: Self.alice)
        }
        await expectError(.badRequest, application: "malformed-action") {
            try await sessions().execute(command("wizard", action: .next), from: Self.alice)
        }
    }

    @Test func prevOnTheFirstStageIsAMalformedAction() async throws {
        let sessions = sessions()
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        await expectError(.badRequest, application: "malformed-action") {
            try await sessions.execute(command("wizard", action: .prev, sessionID: id), from: Self.alice)
        }
    }

}

/// A wall clock a test moves by hand.
final class TestClock: Sendable {
    private let storage = Mutex<UInt64>(1_800_000_000_000)
    var milliseconds: UInt64 {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}

/// A switch a test flips while a command's `isAllowed` reads it.
final class AccessFlag: Sendable {
    private let storage = Mutex(true)
    var value: Bool {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
