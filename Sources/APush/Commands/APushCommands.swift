import ComponentHost
import Logging
import Store
import Synchronization
import XMPP

/// The ad-hoc commands of docs/wire-contract.md (Commands): nodes and field names are an interface for apps; keep them.
///
/// Access is checked by the host on every stage (`isAllowed`), and again here for what a stage
/// touches: a user's commands act on the requester's own bare JID only, never on one named in a form.
struct APushCommands: Sendable {
    let service: PushService
    let context: ModuleContext
    let upstream: Upstream

    static let registrations = APushNamespace.commands + "#registrations"
    static let policy = APushNamespace.commands + "#policy"
    static let test = APushNamespace.commands + "#test"
    static let adminRegistrations = APushNamespace.commands + "#admin-registrations"
    static let adminRemove = APushNamespace.commands + "#admin-remove"
    static let adminPolicy = APushNamespace.commands + "#admin-policy"
    static let adminStats = APushNamespace.commands + "#admin-stats"
    static let adminPruneAccounts = APushNamespace.commands + "#admin-prune-accounts"

    static let pageSize = 50
    static let highestPage = 1_000_000

    /// How many `#test` pushes one account may ask for in a minute: enough to try each kind.
    static let testPushesPerMinute = 5
    /// The stages of user commands one account may run at once (a command is two or three), then one
    /// more every `userCommandInterval`: enough for a person, not for a script.
    static let userCommandBurst = 20
    static let userCommandInterval: Timestamp = 3000

    var all: [AdHocCommand] {
        let context = context
        let isUser: @Sendable (JID) -> Bool = { $0.localpart != nil && context.isServed($0) }
        let isAdmin: @Sendable (JID) -> Bool = { $0.localpart != nil && context.isAdmin($0) }
        let users = [
            AdHocCommand(
                node: Self.registrations, name: "My push registrations", isAllowed: isUser, handler: registrations),
            AdHocCommand(node: Self.policy, name: "My push policy", isAllowed: isUser, handler: policy),
            AdHocCommand(node: Self.test, name: "Send me a test push", isAllowed: isUser, handler: test),
        ].map { command in
            AdHocCommand(node: command.node, name: command.name, isAllowed: command.isAllowed) { [self] request in
                try admit(request.requester)
                return try await command.handler(request)
            }
        }
        let admins = [
            AdHocCommand(
                node: Self.adminRegistrations, name: "List push registrations", isAllowed: isAdmin,
                handler: adminRegistrations),
            AdHocCommand(
                node: Self.adminRemove, name: "Remove push registrations", isAllowed: isAdmin,
                handler: adminRemove),
            AdHocCommand(
                node: Self.adminPolicy, name: "Push policy of an account, or the defaults",
                isAllowed: isAdmin, handler: adminPolicy),
            AdHocCommand(node: Self.adminStats, name: "Push statistics", isAllowed: isAdmin, handler: adminStats),
            AdHocCommand(
                node: Self.adminPruneAccounts, name: "Remove the registrations of deleted accounts",
                isAllowed: isAdmin, handler: adminPruneAccounts),
        ]
        return (users + admins).map { command in
            AdHocCommand(node: command.node, name: command.name, isAllowed: command.isAllowed) { [service] request in
                try await service.answeringStoreFaults(during: "a command") { try await command.handler(request) }
            }
        }
    }

    private var bounds: (Int, Int) { (service.settings.coalesceMinSeconds, service.settings.coalesceMaxSeconds) }

    /// Counts one stage of a user command against its account's rate, before it costs anything; past
    /// the rate, `wait` saying when to come back.
    private func admit(_ requester: JID) throws {
        let now = service.now()
        guard let allowedAt = service.commandRates.withLock({ $0.take(requester.bare.description, at: now) }) else {
            return
        }
        let seconds = (allowedAt - now + 999) / 1000
        throw StanzaError(
            .resourceConstraint, type: .wait,
            text: "too many commands: at most \(Self.userCommandBurst) at once, then one every "
                + "\(Self.userCommandInterval / 1000) s; try again in \(seconds) s")
    }

    // MARK: Users

    private func ownRegistrations(_ requester: JID) async throws -> [Registration] {
        try await service.store.registrations(
            matching: RegistrationFilter(account: requester.bare.description, domain: requester.domainpart),
            limit: 1000, offset: 0)
    }

    @Sendable func registrations(_ request: AdHocRequest) async throws -> AdHocResponse {
        let own = try await ownRegistrations(request.requester)
        if request.stage == 0 {
            guard !own.isEmpty else { return .completed(AdHocNote(.info, "This account has no push registrations.")) }
            var fields: [DataForm.Field] = own.map { .init(variable: nil, type: .fixed, values: [$0.summaryLine]) }
            fields.append(
                .init(
                    variable: "remove", type: .listMulti, label: "Remove these registrations",
                    options: own.map { .init(label: "\($0.fingerprint) · \($0.pushModule)", value: $0.fingerprint) }))
            fields.append(.init(variable: "remove-all", type: .boolean, label: "Remove all of them", values: ["0"]))
            let form = DataForm(
                type: .form, formType: APushNamespace.commands, title: "Your push registrations",
                fields: fields)
            return .next(form)
        }
        let form = try requireForm(request)
        let removeAll = try booleanField(form, "remove-all") ?? false
        let chosen = Set(form.values("remove"))
        let known = Set(own.map(\.fingerprint))
        if let unknown = chosen.subtracting(known).sorted().first {
            throw StanzaError(.badRequest, text: "remove: \(unknown) is not one of your registrations")
        }
        let doomed = own.filter { removeAll || chosen.contains($0.fingerprint) }
        for registration in doomed {
            try await retire(registration)
        }
        return .completed(
            AdHocNote(
                .info,
                doomed.isEmpty
                    ? "Nothing was removed."
                    : "Removed \(doomed.count) registration(s)."))
    }

    @Sendable func policy(_ request: AdHocRequest) async throws -> AdHocResponse {
        try await editPolicy(of: request.requester.bare.description, stage: request.stage, form: request.form)
    }

    @Sendable func test(_ request: AdHocRequest) async throws -> AdHocResponse {
        if request.stage == 0 {
            let kinds = PushService.TestKind.allCases.map(\.rawValue)
            return .next(
                DataForm(
                    type: .form, formType: APushNamespace.commands, title: "Send a test push",
                    fields: [
                        .init(
                            variable: "kind", type: .listSingle, label: "Kind", isRequired: true,
                            values: ["message"],
                            options: kinds.map { .init(label: $0, value: $0) })
                    ]))
        }
        let form = try requireForm(request)
        guard let name = form.value("kind"), let kind = PushService.TestKind(rawValue: name) else {
            throw StanzaError(.badRequest, text: "kind: must be one of message, call, read, wake")
        }
        let now = service.now()
        // The test push bypasses every other limit (docs/wire-contract.md, Commands); this one is the
        // account's in the store, whichever instance it asks.
        if let allowedAt = try await service.store.takeTestPush(
            account: request.requester.bare.description, at: now, window: 60_000, limit: Self.testPushesPerMinute)
        {
            let seconds = (allowedAt - now + 999) / 1000
            throw StanzaError(
                .resourceConstraint, type: .wait,
                text: "too many test pushes: at most \(Self.testPushesPerMinute) a minute; "
                    + "try again in \(seconds) s")
        }
        let results = try await service.sendTest(
            kind, account: request.requester, componentJID: context.componentJID,
            via: upstream)
        guard !results.isEmpty else {
            return .completed(AdHocNote(.warn, "None of your registrations takes \(kind.rawValue) pushes."))
        }
        let lines = results.map { registration, outcome in "\(registration.fingerprint): \(outcome.description)" }
        return .completed(AdHocNote(.info, "Sent a \(kind.rawValue) test push: " + lines.joined(separator: "; ")))
    }

    // MARK: Operators

    @Sendable func adminRegistrations(_ request: AdHocRequest) async throws -> AdHocResponse {
        if request.stage == 0 {
            return .next(
                DataForm(
                    type: .form, formType: APushNamespace.commands, title: "Push registrations",
                    instructions: ["Filter the list, or name one fingerprint to see it in full."],
                    fields: [
                        .init(variable: "account", type: .jidSingle, label: "Account"),
                        .init(variable: "domain", type: .textSingle, label: "Domain"),
                        .init(variable: "module", type: .textSingle, label: "Push module"),
                        .init(variable: "fingerprint", type: .textSingle, label: "Fingerprint (#1a2b3c4d)"),
                        .init(variable: "page", type: .textSingle, label: "Page", values: ["1"]),
                    ]))
        }
        let form = try requireForm(request)
        let filter = try registrationFilter(form)
        if let fingerprint = nonEmpty(form.value("fingerprint")) {
            guard let registration = try await find(fingerprint: fingerprint, filter: filter) else {
                throw StanzaError(.itemNotFound, text: "fingerprint: no registration \(fingerprint)")
            }
            return .completed(form: try await details(registration))
        }
        let pageText = nonEmpty(form.value("page")) ?? "1"
        guard let page = Int(pageText), page >= 1 else {
            throw StanzaError(.badRequest, text: "page: '\(pageText)' is not a page number (1, 2, …)")
        }
        // Past this the offset would overflow; no store holds that many registrations.
        guard page <= Self.highestPage else {
            throw StanzaError(
                .badRequest, text: "page: \(pageText) is past the last possible page (\(Self.highestPage))")
        }
        let pageSize = Self.pageSize
        let total = try await service.store.countRegistrations(matching: filter)
        let rows = try await service.store.registrations(
            matching: filter, limit: pageSize, offset: (page - 1) * pageSize)
        let columns: KeyValuePairs = [
            "fingerprint": "Fingerprint", "account": "Account", "domain": "Domain", "module": "Push module",
            "kinds": "Kinds", "created": "Created", "last-push": "Last push", "last-error": "Last error",
        ]
        let first = (page - 1) * pageSize + 1
        let result = DataForm(
            type: .result, formType: APushNamespace.commands,
            title: rows.isEmpty
                ? "No registrations on page \(page) of \(total)"
                : "Registrations \(first)-\(first + rows.count - 1) of \(total)",
            // The table again as `fixed` lines, for text clients that show no <reported/> table and only
            // the first <instructions/> (profanity 0.13).
            fields: rows.map { .init(variable: nil, type: .fixed, values: [$0.listingLine]) },
            reported: columns.map { .init(variable: $0.key, label: $0.value) },
            items: rows.map { registration in
                [
                    registration.fingerprint, registration.account ?? "", registration.domain, registration.pushModule,
                    registration.kindsDescription, TimeFormat.describe(registration.createdAt),
                    TimeFormat.describe(registration.lastPushAt), registration.lastErrorDescription,
                ]
                .enumerated().map { DataForm.Field(variable: columns[$0.offset].key, values: [$0.element]) }
            })
        return .completed(form: result)
    }

    private func details(_ registration: Registration) async throws -> DataForm {
        let chats = try await service.store.chats(registrationID: registration.id)
        let held = chats.filter { $0.held != nil }.count
        let values: [(variable: String, label: String, value: String)] = [
            ("fingerprint", "Fingerprint", registration.fingerprint),
            ("account", "Account", registration.account ?? "(unknown: stock publish)"),
            ("domain", "Domain", registration.domain),
            ("module", "Push module", registration.pushModule),
            ("kinds", "Kinds", registration.kindsDescription),
            ("created", "Created", TimeFormat.describe(registration.createdAt)),
            ("last-push", "Last push", TimeFormat.describe(registration.lastPushAt)),
            ("last-error", "Last error", registration.lastErrorDescription),
            ("last-wake", "Last wake", TimeFormat.describe(registration.lastWakeAt)),
            ("pushes", "Pushes", String(registration.pushCount)),
            ("errors", "Errors", String(registration.errorCount)),
            ("chats", "Chats", String(chats.count)),
            ("held", "Chats with a held push", String(held)),
        ]
        return DataForm(
            type: .result, formType: APushNamespace.commands, title: "Registration \(registration.fingerprint)",
            fields: values.map { .init(variable: $0.variable, type: .textSingle, label: $0.label, values: [$0.value]) })
    }

    @Sendable func adminRemove(_ request: AdHocRequest) async throws -> AdHocResponse {
        if request.stage == 0 {
            return .next(
                DataForm(
                    type: .form, formType: APushNamespace.commands, title: "Remove push registrations",
                    instructions: ["Name an account (all of its registrations), a fingerprint, or both."],
                    fields: [
                        .init(variable: "account", type: .jidSingle, label: "Account"),
                        .init(variable: "fingerprint", type: .textSingle, label: "Fingerprint (#1a2b3c4d)"),
                    ]))
        }
        let form = try requireForm(request)
        let filter = try registrationFilter(form)
        let fingerprint = nonEmpty(form.value("fingerprint"))
        guard filter.account != nil || fingerprint != nil else {
            throw StanzaError(.badRequest, text: "account or fingerprint: name at least one")
        }
        var doomed: [Registration] = []
        if let fingerprint {
            guard let registration = try await find(fingerprint: fingerprint, filter: filter) else {
                throw StanzaError(.itemNotFound, text: "fingerprint: no registration \(fingerprint)")
            }
            doomed = [registration]
        } else {
            doomed = try await service.store.registrations(matching: filter, limit: 100_000, offset: 0)
        }
        for registration in doomed {
            try await retire(registration)
        }
        context.logger.notice("an operator removed \(doomed.count) registration(s)")
        return .completed(AdHocNote(.info, "Removed \(doomed.count) registration(s)."))
    }

    @Sendable func adminPolicy(_ request: AdHocRequest) async throws -> AdHocResponse {
        if request.stage == 0 {
            return .next(
                DataForm(
                    type: .form, formType: APushNamespace.commands, title: "Whose push policy?",
                    fields: [
                        .init(
                            variable: "account", type: .jidSingle,
                            label: "Account (empty for the defaults)")
                    ]),
                actions: [.next])
        }
        let account: String
        if request.stage == 1 {
            let form = try requireForm(request)
            account =
                try nonEmpty(form.value("account")).map { text throws(StanzaError) in
                    try servedAccount(text, field: "account").description
                } ?? ""
        } else {
            account = request.state["account"] ?? ""
        }
        var response = try await editPolicy(
            of: account.isEmpty ? nil : account, stage: request.stage - 1,
            form: request.form)
        response.state["account"] = account
        return response
    }

    @Sendable func adminStats(_ request: AdHocRequest) async throws -> AdHocResponse {
        let sinceStart = service.statistics.sinceStart
        var totals = try await service.store.counters()
        for (name, amount) in service.statistics.unflushed { totals[name, default: 0] += amount }
        let registrations = try await service.store.countRegistrations(matching: RegistrationFilter())
        let stock = try await service.store.countRegistrationsWithoutAccount()
        let limits = service.settings.storeLimits
        var fields: [DataForm.Field] = [
            .init(
                variable: "registrations", type: .textSingle, label: "Registrations", values: [String(registrations)]),
            .init(
                variable: "registrations-limit", type: .textSingle, label: "Cap of registrations",
                values: [String(limits.registrations)]),
            .init(
                variable: "stock-registrations", type: .textSingle, label: "Registrations with no account",
                values: [String(stock)]),
            .init(
                variable: "stock-registrations-limit", type: .textSingle, label: "Cap of registrations with no account",
                values: [String(limits.registrationsWithoutAccount)]),
            .init(
                variable: "in-flight", type: .textSingle, label: "Publishes in flight",
                values: [String(service.delivery.publishesInFlight)]),
        ]
        for (scope, counts) in [("since-start", sinceStart), ("total", totals)] {
            let scopeLabel = scope == "total" ? "total" : "since start"
            let answers = counts[Statistic.upstreamAnswers.name] ?? 0
            let latency = answers > 0 ? (counts[Statistic.upstreamLatencyMilliseconds.name] ?? 0) / answers : 0
            fields.append(
                .init(
                    variable: "\(scope).upstream.mean-latency-ms", type: .textSingle,
                    label: "Mean upstream latency (ms), \(scopeLabel)", values: [String(latency)]))
            for name in counts.keys.sorted() {
                fields.append(
                    .init(
                        variable: "\(scope).\(name)", type: .textSingle, label: "\(name), \(scopeLabel)",
                        values: [String(counts[name]!)]))
            }
        }
        return .completed(
            form: DataForm(
                type: .result, formType: APushNamespace.commands, title: "Push statistics",
                fields: fields))
    }

    /// Stage 0 asks for a domain; stage 1 asks its server which of the accounts with registrations
    /// still exist and shows how many registrations would go; stage 2, once confirmed, asks again and
    /// removes those of the accounts the server says do not exist. An account the server gives no
    /// answer about (an error, a timeout) is kept.
    @Sendable func adminPruneAccounts(_ request: AdHocRequest) async throws -> AdHocResponse {
        if request.stage == 0 {
            let domains = context.servedDomains.sorted()
            return .next(
                DataForm(
                    type: .form, formType: APushNamespace.commands,
                    title: "Remove the registrations of deleted accounts",
                    instructions: [
                        "The server is asked which accounts with registrations still exist; nothing is removed "
                            + "before you confirm."
                    ],
                    fields: [
                        .init(
                            variable: "domain", type: .listSingle, label: "Domain", isRequired: true,
                            values: Array(domains.prefix(1)), options: domains.map { .init(label: $0, value: $0) }),
                        .init(
                            variable: "after", type: .jidSingle,
                            label: "Start after this account (where a run that stopped said to go on)"),
                    ]),
                actions: [.next])
        }
        let form = try requireForm(request)
        let domainText = request.stage == 1 ? form.value("domain") : request.state["domain"]
        guard let domainText, let domain = try? JID(domainText), domain.isDomainOnly, context.isServed(domain) else {
            throw StanzaError(.badRequest, text: "domain: must be one this component serves")
        }
        let after = request.stage == 1 ? nonEmpty(form.value("after")) : nonEmpty(request.state["after"])
        let query = AccountsQuery(
            sender: context.sender, componentJID: context.componentJID, timeout: upstream.timeout)
        if request.stage >= 2 {
            guard try booleanField(form, "confirm") == true else {
                return .completed(AdHocNote(.info, "Nothing was removed."))
            }
        }
        let found = try await service.findDeletedAccounts(domain: domain, after: after, query: query)
        var notes: [AdHocNote] = []
        if found.unanswered > 0 {
            notes.append(
                AdHocNote(.warn, "The server gave no answer about \(found.unanswered) account(s): they are kept."))
        }
        if let resumeAfter = found.resumeAfter {
            notes.append(
                AdHocNote(
                    .info,
                    "Stopped after \(found.checked) accounts; run it again starting after \(resumeAfter) for the rest.")
            )
        }
        guard !found.gone.isEmpty else {
            notes.insert(
                AdHocNote(
                    .info, "Checked \(found.checked) account(s) with registrations on \(domain): none was deleted."),
                at: 0)
            return AdHocResponse(status: .completed, notes: notes)
        }
        if request.stage >= 2 {
            let removed = try await service.removeRegistrations(ofDeletedAccounts: found.gone, domain: domain)
            notes.insert(
                AdHocNote(
                    .info,
                    "Removed \(removed) registration(s) of \(found.gone.count) account(s) of \(domain) "
                        + "that no longer exist."),
                at: 0)
            return AdHocResponse(status: .completed, notes: notes)
        }
        var registrations = 0
        for account in found.gone {
            registrations += try await service.store.countRegistrations(
                matching: RegistrationFilter(account: account, domain: domain.domainpart))
        }
        let shown = found.gone.prefix(Self.prunedAccountsShown)
        var fields: [DataForm.Field] = [
            .init(
                variable: nil, type: .fixed,
                values: [
                    "\(registrations) registration(s) of \(found.gone.count) of the \(found.checked) account(s) "
                        + "checked on \(domain) would be removed: the server says these accounts no longer exist."
                ])
        ]
        fields += shown.map { .init(variable: nil, type: .fixed, values: [$0]) }
        if found.gone.count > shown.count {
            fields.append(.init(variable: nil, type: .fixed, values: ["…and \(found.gone.count - shown.count) more"]))
        }
        fields.append(.init(variable: "confirm", type: .boolean, label: "Remove them", values: ["0"]))
        return .next(
            DataForm(
                type: .form, formType: APushNamespace.commands, title: "Registrations of deleted accounts",
                fields: fields),
            state: ["domain": domain.description, "after": after ?? ""], notes: notes)
    }

    /// The confirmation lists this many of the accounts it would prune.
    static let prunedAccountsShown = 20

    // MARK: Shared

    /// Stage 0 shows the policy form; stage 1 validates the submission and stores what differs from
    /// the defaults. A bad value changes nothing and names its field.
    private func editPolicy(of account: String?, stage: Int, form: DataForm?) async throws -> AdHocResponse {
        let (minimum, maximum) = bounds
        let current = try await service.policy(for: account)
        if stage == 0 {
            let title = account.map { "Push policy of \($0)" } ?? "Default push policy"
            return .next(current.form(title: title, minimumWindow: minimum, maximumWindow: maximum))
        }
        guard let form else { throw StanzaError(.badRequest, text: "submit the policy form") }
        let updated: PushPolicy
        do {
            updated = try current.applying(form, minimumWindow: minimum, maximumWindow: maximum)
        } catch {
            throw StanzaError(.badRequest, text: error.description)
        }
        if let account {
            let defaults = try await service.policy(for: nil)
            try await service.store.setPolicy(account: account, json: updated.override(over: defaults))
        } else {
            try await service.store.setPolicy(account: nil, json: updated.override(over: service.settings.defaults))
        }
        return .completed(AdHocNote(.info, "Saved. It applies from the next push."))
    }

    private func requireForm(_ request: AdHocRequest) throws -> DataForm {
        guard let form = request.form, form.type == .submit else {
            throw StanzaError(.badRequest, text: "submit the form of the previous stage")
        }
        return form
    }

    private func booleanField(_ form: DataForm, _ name: String) throws -> Bool? {
        do {
            return try form.typedBoolean(name)
        } catch {
            throw StanzaError(.badRequest, text: error.description)
        }
    }

    private func nonEmpty(_ value: String?) -> String? {
        guard let value = value?.trimmed, !value.isEmpty else { return nil }
        return value
    }

    /// A bare account JID of a served domain, or `bad-request` naming the field.
    private func servedAccount(_ text: String, field: String) throws(StanzaError) -> JID {
        guard let jid = try? JID(text), jid.localpart != nil, jid.isBare else {
            throw StanzaError(.badRequest, text: "\(field): '\(text)' is not a bare account JID")
        }
        guard context.isServed(jid) else {
            throw StanzaError(.badRequest, text: "\(field): \(jid.domainpart) is not a domain this component serves")
        }
        return jid
    }

    private func registrationFilter(_ form: DataForm) throws -> RegistrationFilter {
        let account = try nonEmpty(form.value("account")).map { text throws(StanzaError) in
            try servedAccount(text, field: "account").description
        }
        return RegistrationFilter(
            account: account, domain: nonEmpty(form.value("domain")),
            pushModule: nonEmpty(form.value("module")))
    }

    /// The first registration (by id) with this fingerprint among the filtered ones: the store keeps
    /// fingerprints indexed, so this is a lookup.
    private func find(fingerprint: String, filter: RegistrationFilter) async throws -> Registration? {
        var filter = filter
        filter.fingerprint = fingerprint.hasPrefix("#") ? fingerprint : "#" + fingerprint
        return try await service.store.registrations(matching: filter, limit: 1, offset: 0).first
    }

    /// Removes a registration by command and leaves a tombstone for its account only, so the server's
    /// next publishes for it are answered `cancel` and the server drops its own copy (until the client
    /// enables again, or a day passes); another account's registration of the token is untouched.
    private func retire(_ registration: Registration) async throws {
        try await service.store.retire(registrationID: registration.id, at: service.now())
    }
}

extension UpstreamOutcome: CustomStringConvertible {
    var description: String {
        switch self {
        case .accepted: "accepted"
        case .deadToken: "the token is dead; removed"
        case .retry(let reason): "will retry (\(reason))"
        case .rejected(let reason): "rejected (\(reason))"
        }
    }
}
