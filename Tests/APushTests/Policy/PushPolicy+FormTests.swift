import Foundation
import Testing
import XMPP

@testable import APush

@Suite struct PushPolicyFormTests {
    static let minimum = 2
    static let maximum = 120

    static func form(_ policy: PushPolicy = PushPolicy()) -> DataForm {
        policy.form(title: "Push policy", minimumWindow: minimum, maximumWindow: maximum)
    }

    static func submit(_ fields: DataForm.Field...) -> DataForm {
        DataForm(type: .submit, formType: APushNamespace.policyForm, fields: fields)
    }

    static func applying(_ form: DataForm, to policy: PushPolicy = PushPolicy()) throws(PolicyError) -> PushPolicy {
        try policy.applying(form, minimumWindow: minimum, maximumWindow: maximum)
    }

    @Test(arguments: [
        ("messages", DataForm.FieldType.boolean), ("calls", .boolean), ("reads", .boolean), ("wakes", .boolean),
        ("coalesce-seconds", .textSingle), ("groupchat", .listSingle), ("muted", .jidMulti), ("badge-muted", .boolean),
        ("quiet-hours", .textSingle), ("timezone", .textSingle), ("sender", .listSingle),
        ("quiet-messages", .listSingle), ("grace-seconds", .textSingle), ("grace-when", .listSingle),
        ("grace-mentions", .boolean),
    ])
    func theFormCarriesEachFieldWithItsType(variable: String, type: DataForm.FieldType) throws {
        let field = try #require(Self.form().field(variable))
        #expect(field.type == type)
        #expect(field.label != nil)
    }

    @Test func theFormHasThePolicyFormTypeAndTheChoices() {
        let form = Self.form()
        #expect(form.type == .form)
        #expect(form.formType == "urn:xmpp:apush:policy:0")
        #expect(form.field("groupchat")?.options.map(\.value) == ["always", "on-mention", "never"])
        #expect(form.field("sender")?.options.map(\.value) == ["named", "hidden"])
        #expect(form.field("quiet-messages")?.options.map(\.value) == ["wake", "none"])
        #expect(form.field("coalesce-seconds")?.label?.contains("2-120") == true)
        #expect(form.field("grace-when")?.options.map(\.value) == ["active", "connected"])
        #expect(form.field("grace-when")?.options.allSatisfy { $0.label?.count ?? 0 > $0.value.count } == true)
        #expect(form.field("grace-seconds")?.label?.contains("600") == true)
    }

    @Test func theFormShowsThePolicysValues() {
        let form = Self.form(PushPolicyTests.changed)
        #expect(["messages", "calls", "reads", "wakes"].map { form.value($0) } == ["0", "0", "0", "0"])
        #expect(form.value("coalesce-seconds") == "42")
        #expect(form.value("groupchat") == "on-mention")
        #expect(form.values("muted") == ["bob@localhost", "room@conference.localhost"])
        #expect(form.value("badge-muted") == "1")
        #expect(form.value("quiet-hours") == "22:00-07:00")
        #expect(form.value("quiet-messages") == "none")
        #expect(form.value("timezone") == "Europe/Prague")
        #expect(form.value("sender") == "hidden")
        #expect(form.value("grace-seconds") == "30")
        #expect(form.value("grace-when") == "connected")
        #expect(form.value("grace-mentions") == "0")
        let defaults = Self.form()
        #expect(defaults.value("grace-seconds") == "0")
        #expect(defaults.value("grace-when") == "active")
        #expect(defaults.value("grace-mentions") == "1")
        #expect(["messages", "calls", "reads", "wakes"].map { defaults.value($0) } == ["1", "1", "1", "1"])
        #expect(defaults.value("quiet-hours") == "")
        #expect(defaults.values("muted").isEmpty)
        #expect(defaults.value("badge-muted") == "0")
    }

    @Test func theShownFormSubmittedUnchangedGivesThePolicyBack() throws {
        var form = Self.form(PushPolicyTests.changed)
        form.type = .submit
        #expect(try Self.applying(form) == PushPolicyTests.changed)
    }

    /// One submitted field and the policy it makes of the defaults.
    struct Change: Sendable, CustomTestStringConvertible {
        var field: DataForm.Field
        var expected: PushPolicy

        init(_ variable: String, _ values: [String], _ change: (inout PushPolicy) -> Void) {
            field = DataForm.Field(variable: variable, values: values)
            var policy = PushPolicy()
            change(&policy)
            expected = policy
        }

        var testDescription: String { "\(field.variable ?? "") = \(field.values)" }
    }

    @Test(arguments: [
        Change("messages", ["0"]) { $0.messages = false },
        Change("messages", ["false"]) { $0.messages = false },
        Change("calls", ["0"]) { $0.calls = false },
        Change("reads", ["FALSE"]) { $0.reads = false },
        Change("wakes", ["0"]) { $0.wakes = false },
        Change("messages", ["true"]) { _ in },
        Change("coalesce-seconds", [" 30 "]) { $0.coalesceSeconds = 30 },
        Change("coalesce-seconds", ["2"]) { $0.coalesceSeconds = 2 },
        Change("coalesce-seconds", ["120"]) { $0.coalesceSeconds = 120 },
        Change("groupchat", ["never"]) { $0.groupchat = .never },
        Change("groupchat", ["on-mention"]) { $0.groupchat = .onMention },
        Change("muted", ["Bob@LocalHost/phone", "room@conference.localhost", "bob@localhost"]) {
            $0.muted = ["bob@localhost", "room@conference.localhost"]
        },
        Change("badge-muted", ["1"]) { $0.badgeMuted = true },
        Change("quiet-hours", ["22:00-07:00"]) { $0.quietHours = QuietHours("22:00-07:00") },
        Change("quiet-messages", ["none"]) { $0.quietMessages = .none },
        Change("timezone", ["America/New_York"]) { $0.timezone = "America/New_York" },
        Change("sender", ["hidden"]) { $0.sender = .hidden },
        Change("grace-seconds", [" 5 "]) { $0.graceSeconds = 5 },
        Change("grace-seconds", ["600"]) { $0.graceSeconds = 600 },
        Change("grace-seconds", ["0"]) { _ in },
        Change("grace-when", ["connected"]) { $0.graceWhen = .connected },
        Change("grace-mentions", ["0"]) { $0.graceMentions = false },
    ])
    func applyingAFieldChangesOnlyThatField(_ change: Change) throws {
        #expect(try Self.applying(Self.submit(change.field)) == change.expected)
    }

    @Test func fieldsLeftOutKeepTheirValues() throws {
        #expect(try Self.applying(Self.submit(), to: PushPolicyTests.changed) == PushPolicyTests.changed)
    }

    @Test func anEmptyQuietHoursFieldClearsThem() throws {
        let night = PushPolicyTests.changed
        #expect(try Self.applying(Self.submit(.value("quiet-hours", " ")), to: night).quietHours == nil)
        #expect(try Self.applying(Self.submit(.init(variable: "quiet-hours")), to: night).quietHours == nil)
    }

    @Test func anEmptyMutedFieldUnmutesEveryChat() throws {
        #expect(try Self.applying(Self.submit(.init(variable: "muted")), to: PushPolicyTests.changed).muted == [])
    }

    /// Issue 20, item 13: the bound is checked before any entry is prepared (stringprep is the cost), so
    /// a list of 40,000 JIDs, or a few huge ones, is refused without preparing one: here the first entry
    /// is no JID, and the error is still the bound's.
    @Test(arguments: [(entries: 40_000, localLength: 3), (entries: 100, localLength: 1000)])
    func aMutedListPastItsBoundIsRefusedBeforeAnyEntryIsPrepared(entries: Int, localLength: Int) throws {
        let chat = String(repeating: "b", count: localLength) + "@localhost"
        let form = Self.submit(
            .init(
                variable: "muted", type: .jidMulti,
                values: ["not a jid@@"] + Array(repeating: chat, count: entries)))
        let error = try #require(throws: PolicyError.self) { try Self.applying(form) }
        #expect(error.field == "muted")
        #expect(!error.reason.contains("not a valid JID"), "an entry was prepared first: \(error.reason)")
        #expect(error.reason.contains("more than"))
    }

    /// Preparing may lengthen a JID (`ⅷ` becomes `viii`): a list within the bounds as submitted but past
    /// them once prepared is refused too, so the policy kept always comes back through its own form.
    @Test func aMutedListThatPreparingTakesPastItsBoundIsRefused() throws {
        let numeral = String(repeating: "\u{2177}", count: 16)
        let chats = (0..<PushPolicy.maximumMutedChats).map { String(format: "%04d", $0) + numeral + "@localhost" }
        #expect(chats.reduce(0) { $0 + $1.utf8.count } <= PushPolicy.maximumMutedBytes)
        let error = try #require(throws: PolicyError.self) {
            try Self.applying(Self.submit(.init(variable: "muted", type: .jidMulti, values: chats)))
        }
        #expect(error.reason.contains("bytes of chats"), "\(error.reason)")
    }

    @Test func mutedHoldsAtMostTheBoundOfChats() throws {
        func muting(_ count: Int) -> DataForm {
            Self.submit(.init(variable: "muted", type: .jidMulti, values: (0..<count).map { "c\($0)@localhost" }))
        }
        #expect(try Self.applying(muting(PushPolicy.maximumMutedChats)).muted.count == PushPolicy.maximumMutedChats)
        let error = try #require(throws: PolicyError.self) {
            try Self.applying(muting(PushPolicy.maximumMutedChats + 1), to: PushPolicyTests.changed)
        }
        #expect(error.field == "muted")
        #expect(error.reason.contains("\(PushPolicy.maximumMutedChats)"))
        // The same chat many times over is one chat.
        let repeated = Self.submit(
            .init(
                variable: "muted", type: .jidMulti,
                values: Array(repeating: "bob@localhost", count: PushPolicy.maximumMutedChats)))
        #expect(try Self.applying(repeated).muted == ["bob@localhost"])
    }

    @Test(arguments: [
        ("messages", "yes"), ("calls", "2"), ("reads", ""), ("wakes", "on"), ("badge-muted", "maybe"),
        ("coalesce-seconds", "1"), ("coalesce-seconds", "121"), ("coalesce-seconds", "ten"),
        ("coalesce-seconds", "5.5"),
        ("groupchat", "sometimes"), ("muted", "@localhost"), ("quiet-hours", "22-07"), ("quiet-hours", "24:00-07:00"),
        ("quiet-messages", "loud"), ("timezone", "Mars/Olympus_Mons"), ("timezone", ""), ("sender", "nobody"),
        ("grace-seconds", "-1"), ("grace-seconds", "601"), ("grace-seconds", "five"), ("grace-when", "idle"),
        ("grace-mentions", "maybe"),
    ])
    func aBadValueIsAnErrorNamingItsField(variable: String, value: String) throws {
        // Good values beside the bad one do not hide it.
        let good = variable == "messages" ? DataForm.Field.value("calls", "1") : .value("messages", "1")
        let form = Self.submit(good, .value(variable, value))
        let error = try #require(throws: PolicyError.self) { try Self.applying(form, to: PushPolicyTests.changed) }
        #expect(error.field == variable)
        #expect(error.description.hasPrefix(variable + ": "))
    }

    @Test func anOverrideHoldsOnlyTheFieldsThatDiffer() throws {
        let base = PushPolicy()
        #expect(base.override(over: base) == nil)
        #expect(PushPolicyTests.changed.override(over: PushPolicyTests.changed) == nil)

        var mine = base
        mine.messages = false
        mine.muted = ["bob@localhost"]
        #expect(mine.override(over: base) == #"{"messages":false,"muted":["bob@localhost"]}"#)
    }

    @Test func anOverrideMergedOverItsBaseGivesThePolicy() throws {
        let base = PushPolicyTests.changed
        var mine = base
        mine.quietHours = nil
        mine.timezone = "America/New_York"
        mine.coalesceSeconds = 10
        let override = try #require(mine.override(over: base))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(override.utf8)) as? [String: Any])
        #expect(Set(document.keys) == ["quietHours", "timezone", "coalesceSeconds"])
        #expect(document["quietHours"] as? String == "")

        var merged = try #require(try JSONSerialization.jsonObject(with: Data(base.json.utf8)) as? [String: Any])
        merged.merge(document) { $1 }
        let data = try JSONSerialization.data(withJSONObject: merged)
        #expect(try JSONDecoder().decode(PushPolicy.self, from: data) == mine)
    }
}
