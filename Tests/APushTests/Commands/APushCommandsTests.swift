import LocalServers
import ComponentHost
import Foundation
import Logging
import Sealing
import Store
import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush

/// The commands run through AdHocSessions, so stages, sessions and access are the real ones.
@Suite struct APushCommandsTests {
    static let alice = try! JID("alice@localhost/phone")
    static let bob = try! JID("bob@localhost/laptop")
    static let carol = try! JID("carol@localhost/desk")
    static let foreigner = try! JID("mallory@elsewhere.example/x")

    static let userNodes: Set<String> = [APushCommands.registrations, APushCommands.policy, APushCommands.test]
    static let adminNodes: Set<String> = [
        APushCommands.adminRegistrations, APushCommands.adminRemove,
        APushCommands.adminPolicy, APushCommands.adminStats, APushCommands.adminPruneAccounts,
    ]

    /// One answer of a command.
    struct Reply {
        var element: Element
        var status: String? { element[attribute: "status"] }
        var sessionID: String? { element[attribute: "sessionid"] }
        /// What a client submits with the next stage besides its own fields: the form's hidden fields
        /// (FORM_TYPE and the session's state).
        var hiddenFields: [DataForm.Field] { element.hiddenFormFields }
        var notes: [(type: String?, text: String)] {
            element.elements.filter { $0.name == "note" }.map { ($0[attribute: "type"], $0.text) }
        }
        func form() throws -> DataForm {
            try DataForm(element: try #require(element.child("x", namespace: Namespace.dataForms)))
        }
    }

    struct Setup {
        let harness: Harness
        let sessions: AdHocSessions

        init(settings: APushSettings = APushSettings(), store: SQLitePushStore? = nil) throws {
            harness = try Harness(settings: settings, store: store)
            let context = ModuleContext(
                componentJID: try JID("apush.localhost"), servedDomains: ["localhost"],
                admins: [try JID("carol@localhost")], sender: harness.sender,
                logger: .disabled)
            let commands = APushCommands(service: harness.service, context: context, upstream: harness.upstreamLink)
            sessions = AdHocSessions(commands: commands.all, key: AdHocSessionKey(componentSecret: "secret"))
        }

        var store: SQLitePushStore { harness.store }

        func execute(
            _ node: String, as requester: JID, after previous: Reply? = nil, action: AdHocAction? = nil,
            _ fields: DataForm.Field...
        ) async throws -> Reply {
            try await execute(node, as: requester, after: previous, action: action, fields: fields)
        }

        /// One stage as a client sends it: the sessionid of `previous`, and `fields` with its form's
        /// hidden fields.
        func execute(
            _ node: String, as requester: JID, after previous: Reply?, action: AdHocAction?,
            fields: [DataForm.Field]
        ) async throws -> Reply {
            var command = Element(
                "command", namespace: Namespace.commands,
                ["node": node, "sessionid": previous?.sessionID, "action": action?.rawValue])
            let submitted = fields + (previous?.hiddenFields ?? [])
            if !submitted.isEmpty {
                command.append(DataForm(type: .submit, fields: submitted).element)
            }
            return Reply(element: try await sessions.execute(command, from: requester))
        }

        /// Starts `node` and submits `fields` to its second stage with the stage's default action.
        func run(_ node: String, as requester: JID, _ fields: DataForm.Field...) async throws -> Reply {
            let first = try await execute(node, as: requester)
            #expect(first.status == "executing")
            return try await execute(node, as: requester, after: first, action: .execute, fields: fields)
        }

        @discardableResult
        func register(
            _ token: String, account: String? = "alice@localhost", domain: String = "localhost",
            pushModule: String = "apush", calls: CallsMode = .also
        ) async throws -> Registration {
            try await store.register(
                RegistrationRequest(
                    domain: domain, token: token, pushModule: pushModule, account: account,
                    deviceKey: harness.device.publicKey, calls: calls, wantsReads: true),
                freshCollapseKey: Array(repeating: 3, count: 32), now: harness.clock.now)
        }

        func tokens() async throws -> Set<String> {
            Set(try await store.registrations(matching: RegistrationFilter(), limit: 1000, offset: 0).map(\.token))
        }
    }

    static func stanzaError<Result>(_ body: () async throws -> Result) async -> StanzaError? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error as? StanzaError
        }
    }

    // MARK: Access

    @Test func theListDependsOnWhoAsks() throws {
        let setup = try Setup()
        #expect(Set(setup.sessions.available(to: Self.alice).map(\.node)) == Self.userNodes)
        #expect(Set(setup.sessions.available(to: Self.carol).map(\.node)) == Self.userNodes.union(Self.adminNodes))
        #expect(setup.sessions.available(to: Self.foreigner).isEmpty)
        #expect(setup.sessions.available(to: try JID("localhost")).isEmpty)
        #expect(Self.userNodes.union(Self.adminNodes).allSatisfy { $0.hasPrefix("urn:xmpp:apush:0#") })
    }

    @Test func othersAreRefusedEvenWhenTheyNameTheNode() async throws {
        let setup = try Setup()
        for node in Self.adminNodes {
            #expect(await Self.stanzaError { try await setup.execute(node, as: Self.alice) }?.condition == .forbidden)
        }
        for node in Self.userNodes {
            #expect(
                await Self.stanzaError { try await setup.execute(node, as: Self.foreigner) }?.condition
                    == .forbidden)
        }
    }

    // MARK: #registrations

    @Test func registrationsListsOnlyTheRequestersOwnByFingerprint() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("alice-tablet", pushModule: "anotherimIOSprod", calls: .only)
        try await setup.register("bob-phone", account: "bob@localhost")

        let reply = try await setup.execute(APushCommands.registrations, as: Self.alice)
        #expect(reply.status == "executing")
        let form = try reply.form()
        let lines = form.fields.filter { $0.type == .fixed }.compactMap(\.value)
        #expect(lines.count == 2)
        #expect(lines.contains { $0.hasPrefix(Fingerprint.of("alice-phone") + " · apush · messages, calls, reads") })
        #expect(lines.contains { $0.hasPrefix(Fingerprint.of("alice-tablet") + " · anotherimIOSprod · calls") })
        #expect(
            Set(form.field("remove")?.options.map(\.value) ?? [])
                == [Fingerprint.of("alice-phone"), Fingerprint.of("alice-tablet")])
        #expect(form.field("remove")?.type == .listMulti)
        let text = reply.element.serialized()
        for token in ["alice-phone", "alice-tablet", "bob-phone"] {
            #expect(!text.contains(token))
        }
        #expect(!text.contains(Fingerprint.of("bob-phone")))
    }

    @Test func removingAnotherAccountsRegistrationIsRefusedAndTheSessionGoesOn() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("alice-tablet")
        try await setup.register("bob-phone", account: "bob@localhost")

        let first = try await setup.execute(APushCommands.registrations, as: Self.alice)
        let error = await Self.stanzaError {
            try await setup.execute(
                APushCommands.registrations, as: Self.alice, after: first,
                action: .complete,
                .init(
                    variable: "remove", type: .listMulti,
                    values: [Fingerprint.of("alice-phone"), Fingerprint.of("bob-phone")]))
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.hasPrefix("remove:") == true, "\(String(describing: error))")
        #expect(try await setup.tokens() == ["alice-phone", "alice-tablet", "bob-phone"])

        let done = try await setup.execute(
            APushCommands.registrations, as: Self.alice, after: first,
            action: .complete,
            .init(variable: "remove", values: [Fingerprint.of("alice-phone")]))
        #expect(done.status == "completed")
        #expect(done.notes.map(\.text) == ["Removed 1 registration(s)."])
        #expect(try await setup.tokens() == ["alice-tablet", "bob-phone"])
        #expect(
            try await setup.store.isBuried(
                token: "alice-phone", pushModule: "apush", account: "alice@localhost",
                since: 0))
        #expect(
            !(try await setup.store.isBuried(
                token: "alice-tablet", pushModule: "apush", account: "alice@localhost",
                since: 0)))
    }

    @Test func removeAllRemovesEveryOneOfTheRequestersOwn() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("alice-tablet")
        try await setup.register("bob-phone", account: "bob@localhost")
        let reply = try await setup.run(APushCommands.registrations, as: Self.alice, .boolean("remove-all", true))
        #expect(reply.notes.map(\.text) == ["Removed 2 registration(s)."])
        #expect(try await setup.tokens() == ["bob-phone"])
        #expect(
            try await setup.store.isBuried(
                token: "alice-tablet", pushModule: "apush", account: "alice@localhost",
                since: 0))
    }

    /// slixmpp's `Form.reply()` sends the form back whole, its var-less `fixed` lines without their
    /// type (issue 21): the removal still goes through.
    @Test func aFormReplyWithTheFixedLinesStillRemoves() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("alice-tablet")
        let shown = try await setup.execute(APushCommands.registrations, as: Self.alice)
        let lines = try shown.form().fields.filter { $0.variable == nil }.map {
            DataForm.Field(variable: nil, values: $0.values)
        }
        #expect(lines.count == 2)
        let reply = try await setup.execute(
            APushCommands.registrations, as: Self.alice, after: shown, action: .complete,
            fields: lines + [DataForm.Field(variable: "remove", values: [Fingerprint.of("alice-phone")])])
        #expect(reply.notes.map(\.text) == ["Removed 1 registration(s)."])
        #expect(try await setup.tokens() == ["alice-tablet"])
    }

    @Test func submittingNothingRemovesNothing() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        let reply = try await setup.run(APushCommands.registrations, as: Self.alice, .boolean("remove-all", false))
        #expect(reply.notes.map(\.text) == ["Nothing was removed."])
        #expect(try await setup.tokens() == ["alice-phone"])
    }

    @Test func withoutRegistrationsTheCommandSaysSoAndEnds() async throws {
        let setup = try Setup()
        try await setup.register("bob-phone", account: "bob@localhost")
        let reply = try await setup.execute(APushCommands.registrations, as: Self.alice)
        #expect(reply.status == "completed")
        #expect(reply.notes.first?.type == "info")
    }

    /// A store that cannot be opened answers every command (a user's and an operator's) with a `wait`
    /// that says why, logged once.
    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func everyCommandIsAnsweredWaitWhileTheStoreCannotBeOpened() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        let setup = try Setup(store: SQLitePushStore.unavailable(on: mount))
        // Each up to the stage that needs the store: some show a form first.
        let runs: [(String, () async throws -> Reply)] = [
            (APushCommands.registrations, { try await setup.execute(APushCommands.registrations, as: Self.alice) }),
            (APushCommands.policy, { try await setup.execute(APushCommands.policy, as: Self.alice) }),
            (APushCommands.test, { try await setup.run(APushCommands.test, as: Self.alice, .value("kind", "wake")) }),
            (
                APushCommands.adminRegistrations,
                { try await setup.run(APushCommands.adminRegistrations, as: Self.carol) }
            ),
            (
                APushCommands.adminRemove,
                {
                    try await setup.run(APushCommands.adminRemove, as: Self.carol, .value("account", "alice@localhost"))
                }
            ),
            (
                APushCommands.adminPolicy,
                {
                    try await setup.run(APushCommands.adminPolicy, as: Self.carol, .value("account", "alice@localhost"))
                }
            ),
            (APushCommands.adminStats, { try await setup.execute(APushCommands.adminStats, as: Self.carol) }),
            (
                APushCommands.adminPruneAccounts,
                {
                    let first = try await setup.execute(APushCommands.adminPruneAccounts, as: Self.carol)
                    return try await setup.execute(
                        APushCommands.adminPruneAccounts, as: Self.carol, after: first, action: .next,
                        .value("domain", "localhost"))
                }
            ),
        ]
        #expect(Set(runs.map(\.0)) == Self.userNodes.union(Self.adminNodes))
        for (node, run) in runs {
            let error = await Self.stanzaError(run)
            #expect(
                error?.type == .wait && error?.condition == .resourceConstraint, "\(node): \(String(describing: error))"
            )
            #expect(error?.text?.contains("store") == true)
        }
        #expect(setup.harness.logs.events.filter { $0.level == .error }.count == 1)
    }

    // MARK: #policy

    @Test func policyShowsTheCurrentValues() async throws {
        let setup = try Setup()
        try await setup.harness.service.store.setPolicy(account: nil, json: #"{"timezone":"Europe/Prague"}"#)
        try await setup.harness.service.store.setPolicy(
            account: "alice@localhost", json: #"{"messages":false,"muted":["bob@localhost"]}"#)
        let reply = try await setup.execute(APushCommands.policy, as: Self.alice)
        #expect(reply.status == "executing")
        let form = try reply.form()
        #expect(form.formType == APushNamespace.policyForm)
        #expect(form.value("messages") == "0")
        #expect(form.value("calls") == "1")
        #expect(form.values("muted") == ["bob@localhost"])
        #expect(form.value("timezone") == "Europe/Prague")
        #expect(form.value("coalesce-seconds") == "10")
    }

    @Test func policySavesOnlyWhatDiffersFromTheDefaults() async throws {
        let setup = try Setup()
        try await setup.harness.service.store.setPolicy(account: nil, json: #"{"sender":"hidden"}"#)
        let shown = try await setup.execute(APushCommands.policy, as: Self.alice)
        var submitted = try shown.form()
        submitted.type = .submit
        submitted.set("messages", values: ["0"])
        submitted.set("muted", values: ["Bob@localhost/laptop"])
        var command = Element(
            "command", namespace: Namespace.commands,
            ["node": APushCommands.policy, "sessionid": shown.sessionID, "action": "complete"])
        command.append(submitted.element)
        let reply = Reply(element: try await setup.sessions.execute(command, from: Self.alice))
        #expect(reply.status == "completed")
        #expect(
            try await setup.store.policy(account: "alice@localhost") == #"{"messages":false,"muted":["bob@localhost"]}"#
        )
        #expect(try await setup.store.policy(account: nil) == #"{"sender":"hidden"}"#)
        #expect(try await setup.store.policy(account: "bob@localhost") == nil)
    }

    @Test func submittingTheDefaultsStoresNoOverride() async throws {
        let setup = try Setup()
        try await setup.harness.service.store.setPolicy(account: "alice@localhost", json: #"{"messages":false}"#)
        let reply = try await setup.run(APushCommands.policy, as: Self.alice, .boolean("messages", true))
        #expect(reply.status == "completed")
        #expect(try await setup.store.policy(account: "alice@localhost") == nil)
    }

    @Test func aBadPolicyValueIsRefusedNamingTheFieldAndACorrectedSubmitSaves() async throws {
        let setup = try Setup()
        let first = try await setup.execute(APushCommands.policy, as: Self.alice)
        for (variable, value) in [
            ("coalesce-seconds", "9999"), ("quiet-hours", "late"), ("timezone", "Nowhere/City"),
            ("muted", "@localhost"), ("groupchat", "sometimes"),
        ] {
            let error = await Self.stanzaError {
                try await setup.execute(
                    APushCommands.policy, as: Self.alice, after: first,
                    action: .complete, .boolean("messages", false), .value(variable, value))
            }
            #expect(error?.condition == .badRequest)
            #expect(error?.text?.hasPrefix(variable + ":") == true, "\(String(describing: error?.text))")
            #expect(try await setup.store.policy(account: "alice@localhost") == nil)
        }
        let reply = try await setup.execute(
            APushCommands.policy, as: Self.alice, after: first,
            action: .complete, .boolean("messages", false),
            .value("quiet-hours", "22:00-07:00"))
        #expect(reply.status == "completed")
        #expect(
            try await setup.store.policy(account: "alice@localhost")
                == #"{"messages":false,"quietHours":"22:00-07:00"}"#)
    }

    @Test func theSavedPolicyAppliesToTheNextPush() async throws {
        let setup = try Setup()
        try await setup.harness.publishBridged(Stanzas.chat(id: "m1"))
        #expect(setup.harness.upstream.count == 1)
        _ = try await setup.run(APushCommands.policy, as: Self.alice, .value("muted", "bob@localhost"))
        setup.harness.clock.advance(seconds: 60)
        try await setup.harness.publishBridged(Stanzas.chat(id: "m2"))
        #expect(setup.harness.upstream.count == 1)
    }

    // MARK: #test

    @Test(arguments: [("message", String?.none), ("call", "voip"), ("read", "read"), ("wake", "wake")])
    func testSendsTheKindToTheRequestersRegistrations(kind: String, apushKind: String?) async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("bob-phone", account: "bob@localhost")
        let first = try await setup.execute(APushCommands.test, as: Self.alice)
        #expect(Set(try first.form().field("kind")?.options.map(\.value) ?? []) == ["message", "call", "read", "wake"])
        let reply = try await setup.execute(
            APushCommands.test, as: Self.alice, after: first,
            action: .complete, .value("kind", kind))
        #expect(reply.status == "completed")
        #expect(reply.notes.first?.type == "info")
        #expect(reply.notes.first?.text.contains(Fingerprint.of("alice-phone") + ": accepted") == true)
        let upstream = setup.harness.upstream
        try #require(upstream.count == 1)
        #expect(upstream[0].node == "alice-phone")
        #expect(upstream[0].kind == apushKind)
        let summary = try await upstream[0].summaryObject(with: setup.harness.device)
        #expect(summary["test"] as? Bool == true)
        #expect(summary["account"] as? String == "alice@localhost")
        #expect(summary["kind"] as? String == (kind == "call" ? "call" : kind))
    }

    @Test func testWarnsWhenNoRegistrationTakesTheKind() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone", calls: .none)
        let reply = try await setup.run(APushCommands.test, as: Self.alice, .value("kind", "call"))
        #expect(reply.status == "completed")
        #expect(reply.notes.first?.type == "warn")
        #expect(setup.harness.upstream.isEmpty)
    }

    @Test func testRefusesAnUnknownKind() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        let error = await Self.stanzaError {
            try await setup.run(APushCommands.test, as: Self.alice, .value("kind", "fax"))
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.hasPrefix("kind:") == true)
        #expect(setup.harness.upstream.isEmpty)
    }

    @Test func testPushesAreLimitedPerAccount() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("bob-phone", account: "bob@localhost")
        for _ in 0..<APushCommands.testPushesPerMinute {
            let reply = try await setup.run(APushCommands.test, as: Self.alice, .value("kind", "wake"))
            #expect(reply.notes.first?.type == "info")
        }
        let refused = await Self.stanzaError {
            try await setup.run(APushCommands.test, as: Self.alice, .value("kind", "wake"))
        }
        #expect(refused?.condition == .resourceConstraint)
        #expect(refused?.type == .wait)
        #expect(refused?.text?.contains("test pushes") == true)
        #expect(setup.harness.upstream.count == APushCommands.testPushesPerMinute)

        // Another account has its own allowance, and alice's comes back a minute later.
        _ = try await setup.run(APushCommands.test, as: try JID("bob@localhost/phone"), .value("kind", "wake"))
        setup.harness.clock.advance(seconds: 60)
        _ = try await setup.run(APushCommands.test, as: Self.alice, .value("kind", "wake"))
        #expect(setup.harness.upstream.count == APushCommands.testPushesPerMinute + 2)
    }

    @Test func instancesSharingAStoreShareAnAccountsTestLimit() async throws {
        let store = try SQLitePushStore(.memory)
        let (first, second) = (try Setup(store: store), try Setup(store: store))
        try await first.register("alice-phone")
        for _ in 0..<APushCommands.testPushesPerMinute {
            _ = try await first.run(APushCommands.test, as: Self.alice, .value("kind", "wake"))
        }
        let refused = await Self.stanzaError {
            try await second.run(APushCommands.test, as: Self.alice, .value("kind", "wake"))
        }
        #expect(refused?.condition == .resourceConstraint)
        #expect(second.harness.upstream.count == 0)
    }

    // MARK: #admin-registrations

    static func rows(_ form: DataForm) -> [[String: String]] {
        form.items.map { item in
            Dictionary(
                uniqueKeysWithValues: item.compactMap { field in field.variable.map { ($0, field.value ?? "") } })
        }
    }

    /// Issue 20, item 13: user commands share the handler cap and the store with publishes, so each
    /// account may run only so many: past its burst it is answered `wait`, saying when to come back,
    /// until its bucket fills again. Another account, and the admins' commands, are not held up.
    @Test func anAccountsCommandsPastItsRateAreAnsweredWait() async throws {
        let setup = try Setup()
        let burst = APushCommands.userCommandBurst
        for _ in 0..<burst {
            #expect(try await setup.execute(APushCommands.policy, as: Self.alice).status == "executing")
        }
        let refused = await Self.stanzaError { try await setup.execute(APushCommands.policy, as: Self.alice) }
        #expect(refused?.condition == .resourceConstraint)
        #expect(refused?.type == .wait)
        #expect(refused?.text?.contains("too many commands") == true, "\(String(describing: refused?.text))")
        #expect(try await setup.execute(APushCommands.policy, as: Self.bob).status == "executing")
        #expect(try await setup.execute(APushCommands.adminStats, as: Self.carol).status == "completed")
        setup.harness.clock.advance(milliseconds: APushCommands.userCommandInterval)
        #expect(try await setup.execute(APushCommands.policy, as: Self.alice).status == "executing")
    }

    /// The fields and table columns a person sees, shown without a label: profanity shows those as `(null)`.
    static func unlabelled(_ form: DataForm) -> [String] {
        (form.fields + (form.reported ?? [])).filter {
            $0.type != .hidden && $0.type != .fixed && ($0.label ?? "").isEmpty
        }
        .map { $0.variable ?? "?" }
    }

    @Test func everyFieldAPersonSeesHasALabel() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        setup.harness.service.statistics.count(.upstreamAnswers)
        let stats = try await setup.execute(APushCommands.adminStats, as: Self.carol).form()
        // The counters named by the statistics (not only the fixed fields) are there, each labelled.
        #expect(stats.field("since-start.upstream.answers") != nil)
        #expect(stats.field("total.upstream.answers") != nil)
        #expect(Self.unlabelled(stats).isEmpty, "unlabelled: \(Self.unlabelled(stats))")
        for (node, requester) in [
            (APushCommands.registrations, Self.alice), (APushCommands.policy, Self.alice),
            (APushCommands.test, Self.alice), (APushCommands.adminRegistrations, Self.carol),
            (APushCommands.adminRemove, Self.carol), (APushCommands.adminPolicy, Self.carol),
            (APushCommands.adminPruneAccounts, Self.carol),
        ] {
            let form = try await setup.execute(node, as: requester).form()
            #expect(Self.unlabelled(form).isEmpty, "\(node): \(Self.unlabelled(form))")
        }
    }

    @Test func adminRegistrationsPagesByFifty() async throws {
        let setup = try Setup()
        for index in 0..<120 {
            // Eight to an account: each account's cap.
            try await setup.register("token-\(index)", account: "user\(index % 15)@localhost")
        }
        func page(_ number: String) async throws -> DataForm {
            let reply = try await setup.run(APushCommands.adminRegistrations, as: Self.carol, .value("page", number))
            #expect(reply.status == "completed")
            return try reply.form()
        }
        let first = try await page("1")
        #expect(first.items.count == 50)
        // A text client that shows no table still gets one `fixed` line per registration (profanity 0.13
        // shows only the first <instructions/>).
        let lines = first.fields.filter { $0.type == .fixed }.compactMap(\.values.first)
        #expect(lines.count == 50)
        for (line, row) in zip(lines, Self.rows(first)) {
            #expect(line.hasPrefix("\(row["fingerprint"] ?? "?") · \(row["account"] ?? "?") · "))
        }
        #expect(first.title == "Registrations 1-50 of 120")
        #expect(Self.unlabelled(first).isEmpty, "unlabelled columns: \(Self.unlabelled(first))")
        #expect(
            first.reported?.compactMap(\.variable)
                == ["fingerprint", "account", "domain", "module", "kinds", "created", "last-push", "last-error"])
        let third = try await page("3")
        #expect(third.items.count == 20)
        #expect(third.title == "Registrations 101-120 of 120")
        let fourth = try await page("4")
        #expect(fourth.items.isEmpty)
        #expect(fourth.title == "No registrations on page 4 of 120")

        let second = try await page("2")
        let listed = [first, second, third].flatMap(Self.rows).compactMap { $0["fingerprint"] }
        #expect(listed.count == 120)
        #expect(Set(listed) == Set((0..<120).map { Fingerprint.of("token-\($0)") }))
        #expect(await Self.stanzaError { try await page("0") }?.condition == .badRequest)
        #expect(await Self.stanzaError { try await page("two") }?.condition == .badRequest)
    }

    @Test(arguments: ["1000000000000000000", "9223372036854775807", "1e18"])
    func adminRegistrationsRefusesAPageTooFarToReach(_ page: String) async throws {
        let setup = try Setup()
        try await setup.register("token-1")
        let error = await Self.stanzaError {
            try await setup.run(APushCommands.adminRegistrations, as: Self.carol, .value("page", page))
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.hasPrefix("page:") == true)
    }

    @Test func adminRegistrationsFilters() async throws {
        let setup = try Setup()
        try await setup.register("a1")
        try await setup.register("a2", pushModule: "anotherimIOSprod")
        try await setup.register("b1", account: "bob@localhost")
        try await setup.register("old", account: nil, domain: "old.example")

        func fingerprints(_ fields: DataForm.Field...) async throws -> (title: String?, set: Set<String>) {
            let first = try await setup.execute(APushCommands.adminRegistrations, as: Self.carol)
            let form = try await setup.execute(
                APushCommands.adminRegistrations, as: Self.carol, after: first, action: nil, fields: fields
            ).form()
            return (form.title, Set(Self.rows(form).compactMap { $0["fingerprint"] }))
        }
        let alice = try await fingerprints(.value("account", "Alice@localhost"))
        #expect(alice.set == [Fingerprint.of("a1"), Fingerprint.of("a2")])
        #expect(alice.title == "Registrations 1-2 of 2")
        #expect(try await fingerprints(.value("module", "anotherimIOSprod")).set == [Fingerprint.of("a2")])
        #expect(try await fingerprints(.value("domain", "old.example")).set == [Fingerprint.of("old")])
        #expect(try await fingerprints().set.count == 4)
        #expect(
            try await fingerprints(.value("account", "alice@localhost"), .value("module", "apush")).set
                == [Fingerprint.of("a1")])

        let foreign = await Self.stanzaError {
            try await setup.run(
                APushCommands.adminRegistrations, as: Self.carol,
                .value("account", "mallory@elsewhere.example"))
        }
        #expect(foreign?.condition == .badRequest)
        #expect(foreign?.text?.hasPrefix("account:") == true)
    }

    @Test func adminRegistrationsShowsOneByFingerprint() async throws {
        let setup = try Setup()
        let registration = try await setup.register("alice-phone")
        try await setup.store.recordPush(
            registrationID: registration.id, at: ManualClock.start + 1000,
            error: "wait/remote-server-timeout")
        for fingerprint in [registration.fingerprint, String(registration.fingerprint.dropFirst())] {
            let reply = try await setup.run(
                APushCommands.adminRegistrations, as: Self.carol,
                .value("fingerprint", fingerprint))
            let form = try reply.form()
            #expect(form.title == "Registration \(registration.fingerprint)")
            #expect(form.value("fingerprint") == registration.fingerprint)
            #expect(form.value("account") == "alice@localhost")
            #expect(form.value("module") == "apush")
            #expect(form.value("kinds") == "messages, calls, reads")
            #expect(form.value("created") == "2025-11-29 15:26:40 UTC")
            #expect(form.value("last-error")?.hasPrefix("wait/remote-server-timeout at ") == true)
            #expect(Self.unlabelled(form).isEmpty, "unlabelled: \(Self.unlabelled(form))")
            #expect(!reply.element.serialized().contains("alice-phone"))
        }
        let missing = await Self.stanzaError {
            try await setup.run(APushCommands.adminRegistrations, as: Self.carol, .value("fingerprint", "#00000000"))
        }
        #expect(missing?.condition == .itemNotFound)
    }

    // MARK: #admin-prune-accounts

    /// The server's bridge answering the accounts query (docs/wire-contract.md): `gone` do not exist.
    static func accountsServer(gone: Set<String>) -> @Sendable (Element) -> Element? {
        { iq in
            guard let asked = iq.child("accounts", namespace: "urn:xmpp:apush:bridge:0") else { return nil }
            let accounts = asked.elements.map { account in
                let jid = account[attribute: "jid"] ?? ""
                return Element(
                    "account", namespace: "urn:xmpp:apush:bridge:0",
                    ["jid": jid, "exists": gone.contains(jid) ? "false" : "true"])
            }
            return Element(
                "iq", namespace: Namespace.componentAccept, ["type": "result", "from": "localhost", "id": iq.stanzaID],
                children: [Element("accounts", namespace: "urn:xmpp:apush:bridge:0", [:], children: accounts)])
        }
    }

    /// Stages 0 and 1 of `#admin-prune-accounts` for localhost.
    static func pruneCheck(_ setup: Setup) async throws -> Reply {
        let first = try await setup.execute(APushCommands.adminPruneAccounts, as: Self.carol)
        #expect(first.status == "executing")
        return try await setup.execute(
            APushCommands.adminPruneAccounts, as: Self.carol, after: first, action: .next,
            .value("domain", "localhost"))
    }

    @Test func adminPruneAccountsShowsThenRemovesTheRegistrationsOfAccountsTheServerSaysAreGone() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("gone-phone", account: "gone@localhost")
        try await setup.register("gone-tablet", account: "gone@localhost")
        try await setup.register("bob-phone", account: "bob@localhost")
        try await setup.register("stock", account: nil)
        setup.harness.sender.respond(with: Self.accountsServer(gone: ["gone@localhost"]))
        let check = try await Self.pruneCheck(setup)
        #expect(check.status == "executing")
        #expect(
            try check.form().fields.first { $0.type == .fixed }?.values == [
                "2 registration(s) of 1 of the 3 account(s) checked on localhost would be removed: "
                    + "the server says these accounts no longer exist."
            ])
        #expect(try await setup.tokens() == ["alice-phone", "gone-phone", "gone-tablet", "bob-phone", "stock"])
        let query = try #require(setup.harness.sender.requests.first)
        #expect(query.toString == "localhost" && query.fromString == "apush.localhost" && query.stanzaType == "get")
        #expect(
            query.child("accounts", namespace: "urn:xmpp:apush:bridge:0")?.elements.map { $0[attribute: "jid"] } == [
                "alice@localhost", "bob@localhost", "gone@localhost",
            ])
        let done = try await setup.execute(
            APushCommands.adminPruneAccounts, as: Self.carol, after: check, action: .complete, .value("confirm", "1"))
        #expect(done.status == "completed")
        #expect(
            done.notes.map(\.text) == [
                "Removed 2 registration(s) of 1 account(s) of localhost that no longer exist."
            ])
        #expect(try await setup.tokens() == ["alice-phone", "bob-phone", "stock"])
        // The account is gone, not the token: a new account may register it again at once.
        #expect(
            try await !setup.store.isBuried(
                token: "gone-phone", pushModule: "apush", account: "gone@localhost", since: 0))
    }

    @Test func adminPruneAccountsRemovesNothingUnconfirmed() async throws {
        let setup = try Setup()
        try await setup.register("gone-phone", account: "gone@localhost")
        setup.harness.sender.respond(with: Self.accountsServer(gone: ["gone@localhost"]))
        let check = try await Self.pruneCheck(setup)
        let done = try await setup.execute(
            APushCommands.adminPruneAccounts, as: Self.carol, after: check, action: .complete, .value("confirm", "0"))
        #expect(done.notes.map(\.text) == ["Nothing was removed."])
        #expect(try await setup.tokens() == ["gone-phone"])
    }

    @Test(arguments: [
        RecordingSender.Answer.timeout, .disconnected, .error(type: "cancel", condition: "service-unavailable"),
        .result,
    ])
    func adminPruneAccountsKeepsEveryAccountTheServerGivesNoAnswerAbout(_ answer: RecordingSender.Answer) async throws {
        let setup = try Setup()
        try await setup.register("gone-phone", account: "gone@localhost")
        setup.harness.sender.answerAll(answer)
        let check = try await Self.pruneCheck(setup)
        #expect(check.status == "completed")
        #expect(
            check.notes.map(\.text) == [
                "Checked 1 account(s) with registrations on localhost: none was deleted.",
                "The server gave no answer about 1 account(s): they are kept.",
            ])
        #expect(try await setup.tokens() == ["gone-phone"])
    }

    @Test func adminPruneAccountsAsksAHundredAccountsAtATime() async throws {
        let setup = try Setup()
        for index in 0..<250 {
            try await setup.register("t\(index)", account: "user\(index)@localhost")
        }
        setup.harness.sender.respond(with: Self.accountsServer(gone: ["user7@localhost", "user200@localhost"]))
        let check = try await Self.pruneCheck(setup)
        #expect(
            try check.form().fields.first { $0.type == .fixed }?.values.first?.hasPrefix(
                "2 registration(s) of 2 of the 250") == true)
        let sizes = setup.harness.sender.requests.map {
            $0.child("accounts", namespace: "urn:xmpp:apush:bridge:0")?.elements.count
        }
        #expect(sizes == [100, 100, 50])
    }

    @Test func adminPruneAccountsIsForServedDomainsOnly() async throws {
        let setup = try Setup()
        let first = try await setup.execute(APushCommands.adminPruneAccounts, as: Self.carol)
        let error = await Self.stanzaError {
            try await setup.execute(
                APushCommands.adminPruneAccounts, as: Self.carol, after: first, action: .next,
                .value("domain", "elsewhere.example"))
        }
        #expect(error?.condition == .badRequest)
        #expect(setup.harness.sender.requests.isEmpty)
    }

    // MARK: #admin-remove

    @Test func adminRemoveByAccount() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("alice-tablet")
        try await setup.register("bob-phone", account: "bob@localhost")
        let reply = try await setup.run(APushCommands.adminRemove, as: Self.carol, .value("account", "alice@localhost"))
        #expect(reply.notes.map(\.text) == ["Removed 2 registration(s)."])
        #expect(try await setup.tokens() == ["bob-phone"])
        #expect(
            try await setup.store.isBuried(
                token: "alice-phone", pushModule: "apush", account: "alice@localhost",
                since: 0))
    }

    @Test func adminRemoveByFingerprint() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("bob-phone", account: "bob@localhost")
        let reply = try await setup.run(
            APushCommands.adminRemove, as: Self.carol,
            .value("fingerprint", Fingerprint.of("bob-phone")))
        #expect(reply.notes.map(\.text) == ["Removed 1 registration(s)."])
        #expect(try await setup.tokens() == ["alice-phone"])
        #expect(
            try await setup.store.isBuried(
                token: "bob-phone", pushModule: "apush", account: "bob@localhost",
                since: 0))
    }

    @Test func adminRemoveByAccountAndFingerprintMustMatchBoth() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        try await setup.register("bob-phone", account: "bob@localhost")
        let error = await Self.stanzaError {
            try await setup.run(
                APushCommands.adminRemove, as: Self.carol, .value("account", "alice@localhost"),
                .value("fingerprint", Fingerprint.of("bob-phone")))
        }
        #expect(error?.condition == .itemNotFound)
        #expect(try await setup.tokens() == ["alice-phone", "bob-phone"])
    }

    @Test func adminRemoveNeedsAnAccountOrAFingerprint() async throws {
        let setup = try Setup()
        try await setup.register("alice-phone")
        let error = await Self.stanzaError {
            try await setup.run(APushCommands.adminRemove, as: Self.carol, .value("account", " "))
        }
        #expect(error?.condition == .badRequest)
        let foreign = await Self.stanzaError {
            try await setup.run(
                APushCommands.adminRemove, as: Self.carol, .value("account", "mallory@elsewhere.example"))
        }
        #expect(foreign?.condition == .badRequest)
        #expect(try await setup.tokens() == ["alice-phone"])
    }

    // MARK: #admin-policy

    /// Runs admin-policy through its three stages: the account, the form shown, then `fields`.
    func adminPolicy(_ setup: Setup, account: String, _ fields: DataForm.Field...) async throws
        -> (shown: DataForm, reply: Reply)
    {
        let first = try await setup.execute(APushCommands.adminPolicy, as: Self.carol)
        #expect(try first.form().field("account")?.type == .jidSingle)
        let second = try await setup.execute(
            APushCommands.adminPolicy, as: Self.carol, after: first, action: .next, .value("account", account))
        #expect(second.status == "executing")
        #expect(second.sessionID == first.sessionID)
        return (
            try second.form(),
            try await setup.execute(
                APushCommands.adminPolicy, as: Self.carol, after: second, action: .complete, fields: fields)
        )
    }

    @Test func adminPolicySetsAnAccountsPolicy() async throws {
        let setup = try Setup()
        try await setup.harness.service.store.setPolicy(account: "alice@localhost", json: #"{"reads":false}"#)
        let (shown, reply) = try await adminPolicy(setup, account: "Alice@localhost", .value("sender", "hidden"))
        #expect(shown.title == "Push policy of alice@localhost")
        #expect(shown.value("reads") == "0")
        #expect(reply.status == "completed")
        #expect(try await setup.store.policy(account: "alice@localhost") == #"{"reads":false,"sender":"hidden"}"#)
        #expect(try await setup.store.policy(account: nil) == nil)
    }

    @Test func adminPolicySetsTheDefaults() async throws {
        var settings = APushSettings()
        settings.defaults.timezone = "Europe/Prague"
        let setup = try Setup(settings: settings)
        let (shown, reply) = try await adminPolicy(
            setup, account: "", .value("quiet-hours", "22:00-07:00"),
            .value("timezone", "Europe/Prague"))
        #expect(shown.title == "Default push policy")
        #expect(shown.value("timezone") == "Europe/Prague")
        #expect(reply.status == "completed")
        #expect(try await setup.store.policy(account: nil) == #"{"quietHours":"22:00-07:00"}"#)
        #expect(try await setup.harness.service.policy(for: "alice@localhost").quietHours == QuietHours("22:00-07:00"))
    }

    /// Issue 22 item 5: the operator sees and sets whether muted chats count in the badge.
    @Test func adminPolicyShowsAndSetsWhetherMutedChatsCountInTheBadge() async throws {
        var settings = APushSettings()
        settings.defaults.badgeMuted = true
        let setup = try Setup(settings: settings)
        let (shown, reply) = try await adminPolicy(setup, account: "alice@localhost", .value("badge-muted", "0"))
        #expect(shown.field("badge-muted")?.label != nil)
        #expect(shown.value("badge-muted") == "1")
        #expect(reply.status == "completed")
        #expect(try await setup.store.policy(account: "alice@localhost") == #"{"badgeMuted":false}"#)
        #expect(try await !setup.harness.service.policy(for: "alice@localhost").badgeMuted)
        #expect(try await setup.harness.service.policy(for: "bob@localhost").badgeMuted)
    }

    @Test func adminPolicyKeepsTheAccountAcrossABadSubmit() async throws {
        let setup = try Setup()
        let first = try await setup.execute(APushCommands.adminPolicy, as: Self.carol)
        let second = try await setup.execute(
            APushCommands.adminPolicy, as: Self.carol, after: first,
            action: .next, .value("account", "bob@localhost"))
        #expect(try second.form().title == "Push policy of bob@localhost")
        let error = await Self.stanzaError {
            try await setup.execute(
                APushCommands.adminPolicy, as: Self.carol, after: second,
                action: .complete, .value("calls", "maybe"))
        }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.hasPrefix("calls:") == true)
        #expect(try await setup.store.policy(account: "bob@localhost") == nil)
        _ = try await setup.execute(
            APushCommands.adminPolicy, as: Self.carol, after: second,
            action: .complete, .value("calls", "0"))
        #expect(try await setup.store.policy(account: "bob@localhost") == #"{"calls":false}"#)
        #expect(try await setup.store.policy(account: nil) == nil)
    }

    @Test func adminPolicyRefusesAnAccountOfAnotherDomain() async throws {
        let setup = try Setup()
        for account in ["mallory@elsewhere.example", "localhost", "alice@localhost/phone"] {
            let error = await Self.stanzaError {
                let first = try await setup.execute(APushCommands.adminPolicy, as: Self.carol)
                return try await setup.execute(
                    APushCommands.adminPolicy, as: Self.carol, after: first,
                    action: .next, .value("account", account))
            }
            #expect(error?.condition == .badRequest, "\(account)")
            #expect(error?.text?.hasPrefix("account:") == true)
        }
    }

    // MARK: #admin-stats

    func stats(_ setup: Setup) async throws -> DataForm {
        let reply = try await setup.execute(APushCommands.adminStats, as: Self.carol)
        #expect(reply.status == "completed")
        return try reply.form()
    }

    @Test func adminStatsCountsSinceStartAndInTotal() async throws {
        let setup = try Setup()
        for (index, contact) in ["bob", "dave", "erin"].enumerated() {
            try await setup.harness.publishBridged(Stanzas.chat(id: "m\(index)", from: "\(contact)@localhost/x"))
        }
        #expect(setup.harness.upstream.count == 3)
        try await setup.store.increment(["pushes.message.accepted": 5])

        let form = try await stats(setup)
        #expect(form.value("registrations") == "1")
        #expect(form.value("registrations-limit") == "1000000")
        #expect(form.value("stock-registrations") == "0")
        #expect(form.value("stock-registrations-limit") == "250000")
        #expect(form.value("in-flight") == "0")
        #expect(form.value("since-start.pushes.message.accepted") == "3")
        #expect(form.value("total.pushes.message.accepted") == "8")
        #expect(form.value("since-start.upstream.answers") == "3")
        #expect(form.value("since-start.upstream.mean-latency-ms") != nil)

        try await setup.harness.service.flushStatistics()
        let flushed = try await stats(setup)
        #expect(flushed.value("total.pushes.message.accepted") == "8")
        #expect(flushed.value("since-start.pushes.message.accepted") == "3")
    }

    @Test func adminStatsReportsTheMeanLatency() async throws {
        let setup = try Setup()
        try await setup.store.increment(["upstream.latency-ms": 1000, "upstream.answers": 4])
        let form = try await stats(setup)
        #expect(form.value("total.upstream.mean-latency-ms") == "250")
        #expect(form.value("since-start.upstream.mean-latency-ms") == "0")
    }

    @Test func adminStatsCountsPublishesInFlight() async throws {
        let setup = try Setup()
        setup.harness.sender.answerAll(.held)
        let publish = Task { try await setup.harness.publishBridged(Stanzas.chat(id: "m1")) }
        try await setup.harness.sender.waitForRequests(1)
        #expect(try await stats(setup).value("in-flight") == "1")
        setup.harness.sender.release()
        _ = try await publish.value
        #expect(try await stats(setup).value("in-flight") == "0")
    }
}
