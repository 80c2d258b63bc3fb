import Testing
import XMPP

@testable import APush

@Suite struct DataFormTypedBooleanTests {
    static func form(_ value: String?) -> DataForm {
        DataForm(
            type: .submit, formType: APushNamespace.policyForm,
            fields: value.map { [.value("calls", $0)] } ?? [])
    }

    @Test(arguments: [
        ("1", true), ("true", true), (" TRUE ", true), ("0", false), ("False", false),
        ("\tfalse\n", false),
    ])
    func readsABooleanAsPeopleTypeIt(_ value: String, expected: Bool) throws {
        #expect(try Self.form(value).typedBoolean("calls") == expected)
    }

    @Test func anAbsentFieldIsNil() throws {
        #expect(try Self.form(nil).typedBoolean("calls") == nil)
    }

    @Test(arguments: ["yes", "2", "", "on"])
    func anythingElseIsAnErrorNamingTheField(_ value: String) throws {
        let error = try #require(throws: PolicyError.self) { try Self.form(value).typedBoolean("calls") }
        #expect(error.field == "calls")
    }

    @Test(arguments: [
        (nil, SubmittedBoolean.absent), ("1", .value(true)), (" False ", .value(false)),
        (" ONLY ", .other("only")), ("", .other("")),
    ])
    func theOneReaderKeepsWhatIsNoBooleanForTheCaller(_ value: String?, expected: SubmittedBoolean) {
        #expect(Self.form(value).submittedBoolean("calls") == expected)
    }
}
