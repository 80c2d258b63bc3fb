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
                AdHocCommand(node: "seconds", name: "Seconds", isAllowed: { _ in true }, handler: Self.seconds),
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

    /// Stage 0 asks for a number of seconds (offering only `complete`); stage 1 refuses one that is not
    /// a number, as a handler refuses a bad value.
    @Sendable static func seconds(_ request: AdHocRequest) async throws -> AdHocResponse {
        guard request.stage > 0 else {
            return .next(DataForm(type: .form, fields: [DataForm.Field(variable: "seconds", label: "Seconds")]))
        }
        guard let text = request.form?.value("seconds"), Int(text) != nil else {
            throw StanzaError(.badRequest, text: "seconds: not a whole number")
        }
        return .completed(AdHocNote(.info, "\(text) s"))
    }

    /// A request as a client sends it: the sessionid of `answer`, and a form with `fields` and the
    /// hidden fields of `answer`'s form (its session state among them) unless `state` says otherwise.
    private func command(
        _ node: String, action: AdHocAction? = nil, after answer: Element? = nil, sessionID: String? = nil,
        fields: [DataForm.Field] = [], state: String? = nil, sendsForm: Bool = true
    ) -> Element {
        let stateField = answer?.findString(#"\@"# + AdHocSessions.stateField + #"\"#)
        var element = Element(
            "command", namespace: Namespace.commands,
            ["node": node, "action": action?.rawValue, "sessionid": sessionID ?? answer?[attribute: "sessionid"]])
        let hidden = (state ?? stateField).map { [DataForm.Field.hidden(AdHocSessions.stateField, $0)] } ?? []
        if sendsForm, !(fields + hidden).isEmpty {
            element.append(DataForm(type: .submit, fields: fields + hidden).element)
        }
        return element
    }

    /// The error `body` throws; fails the test when it throws none or another kind.
    private func refusal(_ body: () async throws -> Element) async throws -> StanzaError {
        do {
            let answer = try await body()
            Issue.record("expected an error, got \(answer.serialized())")
        } catch let error as StanzaError {
            return error
        }
        throw CancellationError()
    }

    private func stateField(of answer: Element) throws -> String {
        try #require(answer.findString(#"\@"# + AdHocSessions.stateField + #"\"#))
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
        #expect(sessions.available(to: Self.alice).map(\.node) == ["single", "wizard", "seconds"])
        #expect(sessions.available(to: Self.admin).map(\.node) == ["single", "admin-only", "wizard", "seconds"])
        aliceAllowed.value = true
        #expect(sessions.available(to: Self.alice).map(\.node) == ["single", "wizard", "revocable", "seconds"])
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

    @Test func aMultiStageCommandGoesForwardBackAndCompletesUnderOneID() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        #expect(first[attribute: "status"] == "executing")
        #expect(first.findString("actions@execute") == "next")
        #expect(first.check(#"{jabber:x:data}x/title"#))
        #expect(first.findString("{jabber:x:data}x/field<var=\(AdHocSessions.stateField)>@type") == "hidden")
        let id = try #require(first[attribute: "sessionid"])

        let second = try await sessions.execute(
            command("wizard", action: .next, after: first, fields: [.value("name", "Zoë")]), from: Self.alice)
        #expect(second[attribute: "status"] == "executing")
        #expect(second[attribute: "sessionid"] == id, "XEP-0050: the id never changes within a session")
        #expect(second.findString("{jabber:x:data}x/title#") == "Confirm Zoë")
        #expect(second.findElements("actions/*").map(\.name) == ["prev", "complete"])

        let back = try await sessions.execute(command("wizard", action: .prev, after: second), from: Self.alice)
        #expect(back.findString("{jabber:x:data}x/title#") == "Name", "prev shows the first stage again")
        let again = try await sessions.execute(
            command("wizard", action: .next, after: back, fields: [.value("name", "Ada")]), from: Self.alice)
        #expect(again.findString("{jabber:x:data}x/title#") == "Confirm Ada")

        let done = try await sessions.execute(command("wizard", action: .complete, after: again), from: Self.alice)
        #expect(done[attribute: "status"] == "completed")
        #expect(done[attribute: "sessionid"] == id)
        #expect(done.findString("note#") == "hello Ada")
    }

    @Test func aStageThatShowsNoFormStillSendsOneForItsState() async throws {
        let sessions = AdHocSessions(
            commands: [
                AdHocCommand(node: "notice", name: "Notice", isAllowed: { _ in true }) { request in
                    request.stage == 0
                        ? AdHocResponse(status: .executing, notes: [AdHocNote(.info, "sure?")], state: ["n": "1"])
                        : .completed(AdHocNote(.info, "n=\(request.state["n"] ?? "?")"))
                }
            ], key: Self.key)
        let first = try await sessions.execute(command("notice"), from: Self.alice)
        #expect(first.findElements("{jabber:x:data}x/field").map { $0[attribute: "var"] } == [AdHocSessions.stateField])
        let done = try await sessions.execute(command("notice", action: .complete, after: first), from: Self.alice)
        #expect(done.findString("note#") == "n=1")
    }

    @Test func aSessionGoesOnOnAnotherInstanceWithTheSameKey() async throws {
        let (first, second, third) = (sessions(), sessions(), sessions())
        let started = try await first.execute(command("wizard"), from: Self.alice)
        let next = try await second.execute(
            command("wizard", action: .next, after: started, fields: [.value("name", "Zoë")]), from: Self.alice)
        #expect(next[attribute: "status"] == "executing")
        let done = try await third.execute(command("wizard", action: .complete, after: next), from: Self.alice)
        #expect(done.findString("note#") == "hello Zoë")
    }

    @Test func anotherKeyRefusesTheSession() async throws {
        let first = try await sessions().execute(command("wizard"), from: Self.alice)
        let other = sessions(key: AdHocSessionKey(componentSecret: "another secret"))
        await expectError(.badRequest, application: "bad-sessionid") {
            try await other.execute(command("wizard", action: .next, after: first), from: Self.alice)
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

    @Test func cancelAnswersCanceledWithoutAForm() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let canceled = try await sessions.execute(
            command("wizard", action: .cancel, after: first, sendsForm: false), from: Self.alice)
        #expect(canceled[attribute: "status"] == "canceled")
        #expect(canceled[attribute: "sessionid"] == first[attribute: "sessionid"])
        #expect(canceled.child("actions") == nil)
    }

    /// A stage's form opens again until it expires, and re-runs its stage (for the same requester only,
    /// access checked again).
    @Test func aStagesFormOpensAgainUntilItExpires() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        for name in ["Zoë", "Ada"] {
            let answer = try await sessions.execute(
                command("wizard", action: .next, after: first, fields: [.value("name", name)]), from: Self.alice)
            #expect(answer.findString("{jabber:x:data}x/title#") == "Confirm \(name)")
        }
        clock.milliseconds += 600_000
        await expectError(.notAllowed, application: "session-expired") {
            try await sessions.execute(command("wizard", action: .next, after: first), from: Self.alice)
        }
    }

    @Test func aStaleForeignOrMissingSessionIsABadSessionID() async throws {
        let sessions = sessions()
        let another = self.sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let name = [DataForm.Field.value("name", "Zoë")]
        let refusals = [
            (command("wizard", action: .next, after: first, sessionID: "another-session", fields: name), Self.alice),
            (command("wizard", action: .next, after: first, fields: name), Self.aliceLaptop),
            (command("single", action: .execute, after: first), Self.alice),
            (command("wizard", action: .next, after: first, fields: name, state: ""), Self.alice),
        ]
        for (request, requester) in refusals {
            await expectError(.badRequest, application: "bad-sessionid") {
                try await sessions.execute(request, from: requester)
            }
        }
        // Without the state field, only the instance that answered the stage knows the session.
        for request in [
            command("wizard", action: .next, after: first, fields: name, sendsForm: false),
            command("wizard", action: .next, sessionID: first[attribute: "sessionid"], fields: name),
        ] {
            await expectError(.badRequest, application: "bad-sessionid") {
                try await another.execute(request, from: Self.alice)
            }
            await expectError(.badRequest, application: "bad-sessionid") {
                try await sessions.execute(request, from: Self.aliceLaptop)
            }
        }
        let stillThere = try await sessions.execute(
            command("wizard", action: .next, after: first, fields: name), from: Self.alice)
        #expect(stillThere[attribute: "status"] == "executing", "the owner's session survives the attempts")
    }

    @Test func anExpiredSessionIsASessionExpired() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        clock.milliseconds += 599_999
        let name = [DataForm.Field.value("name", "x")]
        let next = try await sessions.execute(
            command("wizard", action: .next, after: first, fields: name), from: Self.alice)
        #expect(next[attribute: "status"] == "executing", "alive until its last millisecond")
        clock.milliseconds += 1
        await expectError(.notAllowed, application: "session-expired") {
            try await sessions.execute(command("wizard", action: .next, after: first, fields: name), from: Self.alice)
        }
        let done = try await sessions.execute(command("wizard", action: .complete, after: next), from: Self.alice)
        #expect(done[attribute: "status"] == "completed", "each stage's form lives its own lifetime")
    }

    @Test func aTamperedTruncatedOrOversizedStateIsABadSessionID() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let state = try stateField(of: first)
        var bytes = try #require(Data(base64Encoded: state))
        var hostile = [
            "=", "not base64 at all", String(state.dropLast(4)), String(state.dropFirst(4)),
            state + "AAAA", String(repeating: "A", count: 10_000_000), String(repeating: "A", count: 4096),
            Data(bytes.prefix(bytes.count - 32)).base64EncodedString(),
        ]
        for index in [0, 9, 11, bytes.count - 1] {
            bytes[index] ^= 0x01
            hostile.append(bytes.base64EncodedString())
            bytes[index] ^= 0x01
        }
        #expect(bytes.base64EncodedString() == state)
        for candidate in hostile {
            await expectError(.badRequest, application: "bad-sessionid") {
                try await sessions.execute(
                    command("wizard", action: .next, after: first, state: candidate), from: Self.alice)
            }
        }
    }

    /// A state sealed by an independent implementation of the format (Python's hmac, as in
    /// Fuzz/Corpus/ad-hoc-session/sealed-state): the key derivation and the MAC are the documented ones.
    @Test func aStateSealedElsewhereOpens() throws {
        let sealed =
            "AgAAAaMYZXfAAAMAAAAAAAEAB2FjY291bnQAD2FsaWNlQGxvY2FsaG9zdAACAAhtZXNzYWdlcwAFbXV0ZWQ4VmLCnoSmxVROonUf5KvGWCuqyffyWwRfAb5MhnZi/A=="
        let key = AdHocSessionKey(componentSecret: "fuzz")
        let owner = try JID("alice@example.org/phone")
        func opened(sessionID: String = "session-1", at now: UInt64 = 1_800_000_000_000) -> AdHocSessionState? {
            AdHocSessionState(opening: sealed, key: key, sessionID: sessionID, node: "node", owner: owner, now: now)
        }
        let session = try #require(opened())
        #expect(
            session
                == AdHocSessionState(
                    expires: 1_800_000_600_000, states: [[:], [:], ["account": "alice@localhost"]],
                    fields: ["messages", "muted"]))
        #expect(session.stage == 2)
        #expect(opened(at: 1_800_000_600_000) == nil)
        #expect(opened(sessionID: "session-2") == nil)
    }

    /// The body is read only past its MAC, but reading it must not trap even if the key leaked.
    @Test func aMalformedBodyDecodesToNothing() throws {
        let valid = AdHocSessionState(expires: 9, states: [[:], ["name": "Zoë"]], fields: ["name"])
        let sealed = try #require(valid.sealed(key: Self.key, sessionID: "s", node: "wizard", owner: Self.alice))
        let body = Array(try #require(Data(base64Encoded: sealed)).dropLast(32))
        #expect(AdHocSessionState.decode(body) == valid)
        #expect(AdHocSessionState.decode([]) == nil)
        #expect(AdHocSessionState.decode(Array(body.dropLast())) == nil, "truncated")
        #expect(AdHocSessionState.decode(body + [0]) == nil, "trailing bytes")
        #expect(AdHocSessionState.decode([1] + body.dropFirst()) == nil, "another version")
        let noStates: [UInt8] = [2] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0]
        #expect(AdHocSessionState.decode(noStates) == nil)
        let promisesMore: [UInt8] = [2] + [UInt8](repeating: 0, count: 8) + [0xff, 0xff, 0xff, 0xff]
        #expect(AdHocSessionState.decode(promisesMore) == nil)
    }

    /// A requester that kept the first stage's form and sends the second stage's fields with it would
    /// otherwise run the first stage again with the wrong form.
    @Test func anEarlierStagesFormCannotTakeALaterStagesFields() async throws {
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
        let second = try await sessions.execute(
            command("survey", action: .next, after: first, fields: [.value("account", "bob@example.org")]),
            from: Self.alice)
        let color = [DataForm.Field.value("color", "red")]
        await expectError(.badRequest, application: "bad-sessionid") {
            try await sessions.execute(
                command("survey", action: .complete, after: first, fields: color), from: Self.alice)
        }
        let done = try await sessions.execute(
            command("survey", action: .complete, after: second, fields: color), from: Self.alice)
        #expect(done.findString("note#") == "red")
    }

    @Test func aStateTooLargeForItsFieldIsAResourceConstraint() async {
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
        let first = try await sessions.execute(command("revocable"), from: Self.alice)
        aliceAllowed.value = false
        await expectError(.forbidden) {
            try await sessions.execute(command("revocable", action: .next, after: first), from: Self.alice)
        }
    }

    /// XEP-0050 §4.6 lists `forbidden` with type `cancel`.
    @Test func aCommandTheRequesterMayNotRunIsForbidden() async throws {
        let error = try await refusal { try await sessions().execute(command("admin-only"), from: Self.alice) }
        #expect(error.condition == .forbidden)
        #expect(error.type == .cancel)
    }

    /// XEP-0050 §3.5: once canceled, the session is over; its forms do not open again.
    /// XEP-0050: the session id stays the same to the end, so a client may keep it and send no form
    /// (or one without the state field): the instance that answered the stage goes on from what it gave.
    @Test func aClientThatKeepsOnlyTheSessionIDGoesOn() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let sessionID = try #require(first[attribute: "sessionid"])
        let confirm = try await sessions.execute(
            command("wizard", action: .next, sessionID: sessionID, fields: [.value("name", "Zoë")]), from: Self.alice)
        #expect(confirm.findString("{jabber:x:data}x/title#") == "Confirm Zoë")
        #expect(confirm[attribute: "sessionid"] == sessionID)
        let done = try await sessions.execute(
            command("wizard", action: .complete, sessionID: sessionID, sendsForm: false), from: Self.alice)
        #expect(done[attribute: "status"] == "completed")
        #expect(done.findString("note#") == "hello Zoë")
        await expectError(.notAllowed, application: "session-expired") {
            try await sessions.execute(
                command("wizard", action: .complete, sessionID: sessionID, sendsForm: false), from: Self.alice)
        }
    }

    @Test func knownSessionsForgetTheFirstToExpirePastTheirCapacity() {
        let known = KnownSessions(capacity: 2)
        func key(_ id: String) -> KnownSessions.Key {
            KnownSessions.Key(sessionID: id, node: "wizard", owner: Self.alice.description)
        }
        known.remember(key("a"), latestField: "A", until: 300, now: 0)
        known.end(key("b"), until: 100, now: 0)
        known.remember(key("c"), latestField: "C", until: 200, now: 0)
        #expect(known.state(of: key("b"), at: 0) == nil, "the first to expire is forgotten")
        #expect(known.state(of: key("a"), at: 0) == .open(latestField: "A"))
        #expect(known.state(of: key("c"), at: 199) == .open(latestField: "C"))
        #expect(known.state(of: key("c"), at: 200) == nil, "expired")
    }

    @Test func aCanceledSessionIsExpired() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let name = [DataForm.Field.value("name", "Zoë")]
        _ = try await sessions.execute(
            command("wizard", action: .cancel, after: first, sendsForm: false), from: Self.alice)
        await expectError(.notAllowed, application: "session-expired") {
            try await sessions.execute(command("wizard", action: .next, after: first, fields: name), from: Self.alice)
        }
        let again = try await sessions.execute(
            command("wizard", action: .cancel, after: first, sendsForm: false), from: Self.alice)
        #expect(again[attribute: "status"] == "canceled", "canceling twice is harmless")
    }

    /// XEP-0050 §4.4: an action the stage did not offer is `bad-action`; `execute` is its default.
    @Test func anActionTheStageDidNotOfferIsABadAction() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("seconds"), from: Self.alice)
        #expect(first.findElements("actions/*").map(\.name) == ["complete"])
        let value = [DataForm.Field.value("seconds", "30")]
        for action in [AdHocAction.next, .prev] {
            await expectError(.badRequest, application: "bad-action") {
                try await sessions.execute(
                    command("seconds", action: action, after: first, fields: value), from: Self.alice)
            }
        }
        let done = try await sessions.execute(
            command("seconds", action: .execute, after: first, fields: value), from: Self.alice)
        #expect(done[attribute: "status"] == "completed", "execute runs the default, complete")
    }

    /// XEP-0050 §4.6: a refused value is `bad-payload`, and the error echoes the request's command
    /// (node, sessionid, status) so that the client finds its session; the session goes on.
    @Test func aRefusedValueIsABadPayloadThatEchoesTheSession() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("seconds"), from: Self.alice)
        let error = try await refusal {
            try await sessions.execute(
                command("seconds", action: .complete, after: first, fields: [.value("seconds", "abc")]),
                from: Self.alice)
        }
        #expect(error.condition == .badRequest)
        #expect(error.applicationCondition?.name == "bad-payload")
        #expect(error.applicationCondition?.namespace == Namespace.commands)
        let echo = try #require(error.payload)
        #expect(echo.name == "command" && echo.namespace == Namespace.commands)
        #expect(echo[attribute: "node"] == "seconds")
        #expect(echo[attribute: "sessionid"] == first[attribute: "sessionid"])
        #expect(echo[attribute: "status"] == "executing")
        let done = try await sessions.execute(
            command("seconds", action: .complete, after: first, fields: [.value("seconds", "30")]), from: Self.alice)
        #expect(done[attribute: "status"] == "completed")
    }

    /// Refusals of the session itself echo the command too, with the session over.
    @Test func aRefusedSessionEchoesTheCommand() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        let error = try await refusal {
            try await sessions.execute(
                command("wizard", action: .next, after: first, state: "forged"), from: Self.alice)
        }
        #expect(error.applicationCondition?.name == "bad-sessionid")
        #expect(error.payload?[attribute: "sessionid"] == first[attribute: "sessionid"])
        #expect(error.payload?[attribute: "node"] == "wizard")
        #expect(error.payload?[attribute: "status"] == "canceled")
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

    @Test func prevOnTheFirstStageIsABadAction() async throws {
        let sessions = sessions()
        let first = try await sessions.execute(command("wizard"), from: Self.alice)
        await expectError(.badRequest, application: "bad-action") {
            try await sessions.execute(command("wizard", action: .prev, after: first), from: Self.alice)
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
