import Synchronization
import Testing
import XMLStream
import XMPP

@Suite struct AdHocSessionsTests {
    static let alice = try! JID("alice@example.org/phone")
    static let aliceLaptop = try! JID("alice@example.org/laptop")
    static let admin = try! JID("admin@example.org/desk")

    /// Whether `alice` may run the "revocable" command; flipped by a test between stages.
    private let aliceAllowed = AccessFlag()

    private func sessions() -> AdHocSessions {
        let flag = aliceAllowed
        return AdHocSessions(commands: [
            AdHocCommand(node: "single", name: "Single", isAllowed: { _ in true }) { request in
                .completed(AdHocNote(.info, "done for \(request.requester.bare)"))
            },
            AdHocCommand(node: "admin-only", name: "Admin", isAllowed: { $0.bare == Self.admin.bare }) { _ in
                .completed(AdHocNote(.info, "admin done"))
            },
            AdHocCommand(node: "wizard", name: "Wizard", isAllowed: { _ in true }, handler: Self.wizard),
            AdHocCommand(node: "revocable", name: "Revocable", isAllowed: { _ in flag.value }, handler: Self.wizard),
        ])
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
        #expect(second[attribute: "sessionid"] == id)
        #expect(second.findString("{jabber:x:data}x/title#") == "Confirm Zoë")
        #expect(second.findElements("actions/*").map(\.name) == ["prev", "complete"])

        let back = try await sessions.execute(command("wizard", action: .prev, sessionID: id), from: Self.alice)
        #expect(back.findString("{jabber:x:data}x/title#") == "Name", "prev shows the first stage again")
        _ = try await sessions.execute(command("wizard", action: .next, sessionID: id, form: name), from: Self.alice)

        let done = try await sessions.execute(command("wizard", action: .complete, sessionID: id), from: Self.alice)
        #expect(done[attribute: "status"] == "completed")
        #expect(done.findString("note#") == "hello Zoë")
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", action: .next, sessionID: id), from: Self.alice)
        }
    }

    @Test func cancelEndsTheSession() async throws {
        let sessions = sessions()
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        let canceled = try await sessions.execute(command("wizard", action: .cancel, sessionID: id), from: Self.alice)
        #expect(canceled[attribute: "status"] == "canceled")
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
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "wizard", name: "Wizard", isAllowed: { _ in true }, handler: Self.wizard)
            ], lifetime: .milliseconds(50))
        let id = try #require(try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"])
        try await Task.sleep(for: .milliseconds(100))
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", action: .next, sessionID: id), from: Self.alice)
        }
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

    @Test func tooManyOpenSessionsIsAResourceConstraint() async throws {
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "wizard", name: "Wizard", isAllowed: { _ in true }, handler: Self.wizard)
            ], maximumSessions: 2)
        _ = try await sessions.execute(command("wizard"), from: Self.alice)
        _ = try await sessions.execute(command("wizard"), from: Self.alice)
        await expectError(.resourceConstraint) { try await sessions.execute(command("wizard"), from: Self.alice) }
    }

    @Test func oneRequesterCannotTakeEverySession() async throws {
        let sessions = sessions()
        let bob = try JID("bob@example.org/phone")
        for index in 0..<1000 {
            let resource = index.isMultiple(of: 2) ? Self.alice : Self.aliceLaptop
            _ = try await sessions.execute(command("wizard"), from: resource)
        }
        let bobs = try await sessions.execute(command("wizard"), from: bob)
        #expect(bobs[attribute: "status"] == "executing")
    }

    @Test func aRequesterPastItsShareLosesItsOwnOldestSession() async throws {
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "wizard", name: "Wizard", isAllowed: { _ in true }, handler: Self.wizard)
            ], maximumSessionsPerRequester: 2)
        let oldest = try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"]
        let older = try await sessions.execute(command("wizard"), from: Self.aliceLaptop)[attribute: "sessionid"]
        let newest = try await sessions.execute(command("wizard"), from: Self.alice)[attribute: "sessionid"]
        let form = DataForm(type: .submit, fields: [DataForm.Field(variable: "name", values: ["x"])])
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(command("wizard", sessionID: oldest, form: form), from: Self.alice)
        }
        for (id, owner) in [(older, Self.aliceLaptop), (newest, Self.alice)] {
            let next = try await sessions.execute(command("wizard", sessionID: id, form: form), from: owner)
            #expect(next[attribute: "status"] == "executing")
        }
    }

    @Test func abandonedSessionsStopCountingOnceTheyExpire() async throws {
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "wizard", name: "Wizard", isAllowed: { _ in true }, handler: Self.wizard)
            ], lifetime: .milliseconds(50), maximumSessions: 1)
        _ = try await sessions.execute(command("wizard"), from: Self.alice)
        try await Task.sleep(for: .milliseconds(100))
        let fresh = try await sessions.execute(command("wizard"), from: Self.aliceLaptop)
        #expect(fresh[attribute: "status"] == "executing")
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
