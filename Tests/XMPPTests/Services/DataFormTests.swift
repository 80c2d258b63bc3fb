import Testing
import XMLStream
import XMPP

@Suite struct DataFormTests {
    @Test func readsTheProsodySummaryForm() throws {
        let element = try #require(
            Fixtures.prosodyStockPublish.findElement(
                "{http://jabber.org/protocol/pubsub}pubsub/publish/item/{urn:xmpp:push:0}notification/{jabber:x:data}x")
        )
        let form = try DataForm(element: element)
        #expect(form.type == .form)
        #expect(form.formType == Namespace.pushSummary)
        #expect(
            form.fields.map(\.variable) == [
                "FORM_TYPE", "message-count", "pending-subscription-count",
                "last-message-sender", "last-message-body",
            ])
        #expect(form.field("last-message-sender")?.type == .jidSingle)
        #expect(form.value("message-count") == "1")
        #expect(form.value("pending-subscription-count") == nil)
        #expect(form.values("pending-subscription-count") == [])
        #expect(form.values("absent") == [])
        #expect(form.value("last-message-body") == "New Message!")
    }

    @Test(arguments: ["prosodyStockPublish", "ejabberdPublish"])
    func readsPublishOptionsWhoseFormTypeIsNotHidden(fixture: String) throws {
        let stanza = try #require(Fixtures.all[fixture])
        let element = try #require(
            stanza.findElement(
                "{http://jabber.org/protocol/pubsub}pubsub/publish-options/{jabber:x:data}x"))
        let form = try DataForm(element: element)
        #expect(form.type == .submit)
        #expect(form.formType == Namespace.pubsubPublishOptions)
        #expect(form.field("FORM_TYPE")?.type == nil)
        #expect(form.bool("apushCalls") == true)
        #expect(form.bool("apushRead") == true)
        #expect(form.bool("pushModule") == nil)
        #expect(form.bool("absent") == nil)
    }

    @Test func readsLabelsOfEjabberdsSummary() throws {
        let element = try #require(
            Fixtures.ejabberdPublish.findElement(
                #"{http://jabber.org/protocol/pubsub}pubsub/publish/item/{urn:xmpp:push:0}notification/\\"#))
        let form = try DataForm(element: element)
        #expect(form.field("last-message-body")?.label == "The body text of the last received message")
    }

    @Test func writesASubmission() {
        let form = DataForm.submit(formType: Namespace.pubsubPublishOptions, values: ["pushModule": "apush"])
        #expect(
            form.element.serialized() == "<x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE' type='hidden'>"
                + "<value>http://jabber.org/protocol/pubsub#publish-options</value></field>"
                + "<field var='pushModule'><value>apush</value></field></x>")
    }

    @Test func roundTripsEveryPart() throws {
        let form = DataForm(
            type: .result, formType: "urn:example:config", title: "Settings",
            instructions: ["Line one", "Line two"],
            fields: [
                DataForm.Field(
                    variable: "mode", type: .listSingle, label: "Mode", description: "How to push",
                    isRequired: true, values: ["fast"],
                    options: [DataForm.Option(label: "Fast", value: "fast"), DataForm.Option(value: "slow")]),
                DataForm.Field(variable: "admins", type: .jidMulti, values: ["a@example.com", "b@example.com"]),
                DataForm.Field(variable: nil, type: .fixed, values: ["A note"]),
                .boolean("enabled", true, label: "Enabled"),
                DataForm.Field(variable: "empty", type: .textMulti),
            ],
            reported: [DataForm.Field(variable: "jid", type: .jidSingle, label: "JID")],
            items: [[.value("jid", "a@example.com")], [.value("jid", "b@example.com")]])
        let parsed = try DataForm(element: form.element)
        #expect(parsed == form)
        #expect(parsed.formType == "urn:example:config")
        #expect(parsed.bool("enabled") == true)
        #expect(parsed.values("admins") == ["a@example.com", "b@example.com"])
    }

    @Test func setsValues() {
        var form = DataForm(type: .submit, formType: "urn:example")
        form.set("a", values: ["1"])
        form.set("a", values: ["2"])
        form.set(DataForm.formTypeVariable, values: ["urn:other"])
        #expect(form.fields.map(\.variable) == ["FORM_TYPE", "a"])
        #expect(form.value("a") == "2")
        #expect(form.formType == "urn:other")
    }

    static func form(type: String? = "submit", _ children: Element...) -> Element {
        var form = Element("x", namespace: Namespace.dataForms, ["type": type])
        for child in children { form.append(child) }
        return stanza(form)
    }

    @Test(
        arguments: [
            (stanza(node("x", xmlns: "urn:other", ["type": "submit"])), DataFormError.notADataForm),
            (stanza(node("form", xmlns: Namespace.dataForms, ["type": "submit"])), .notADataForm),
            (DataFormTests.form(type: nil), .missingFormType),
            (DataFormTests.form(type: "draft"), .unknownFormType("draft")),
            (DataFormTests.form(field("a", type: "text-huge")), .unknownFieldType("text-huge")),
            (DataFormTests.form(field("a", "1"), field("a", "2")), .duplicateField("a")),
            (DataFormTests.form(field("a", type: "list-single", "1", "2")), .multipleValuesInSingleValuedField("a")),
            (DataFormTests.form(field("b", type: "boolean", "yes")), .invalidBoolean(field: "b", value: "yes")),
            (
                DataFormTests.form(
                    node("field", ["var": "l", "type": "list-single"], node("option", ["label": "No value"]))),
                .optionWithoutValue(field: "l")
            ),
            (
                DataFormTests.form(type: "result", node("reported", field("j")), node("reported", field("j"))),
                .duplicateReported
            ),
            (DataFormTests.form(type: "result", node("item", field("j", "x"))), .itemsWithoutReported),
            (
                DataFormTests.form(
                    type: "result", node("reported", field("j")), node("item", field("j", "x"), field("j", "y"))),
                .duplicateField("j")
            ),
        ] as [(Element, DataFormError)])
    func rejectsMalformedForms(element: Element, expected: DataFormError) {
        #expect(throws: expected) { try DataForm(element: element) }
    }

    @Test func acceptsWhatXEP0004Allows() throws {
        let form = try DataForm(
            element: Self.form(
                node("field", ["type": "fixed"], node("value", text: "Section")),
                field("multi", type: "text-multi", "a", "b"),
                field("untyped", "c", "d"),
                node("unknown-extension", xmlns: "urn:example:ext")))
        #expect(form.fields.count == 3)
        #expect(form.values("multi") == ["a", "b"])
        // A submission may leave the type out of a multi-valued field (a list-multi or jid-multi).
        #expect(form.values("untyped") == ["c", "d"])
    }

    /// XEP-0004 §3.2: a receiver ignores fields it does not understand. slixmpp's `Form.reply()` sends a
    /// form's var-less `fixed` fields back without their type; the submission still counts.
    @Test func ignoresFieldsWithoutAVariable() throws {
        let form = try DataForm(
            element: Self.form(
                node("field", [:], node("value", text: "#1a2b3c4d · apns")),
                node("field", ["type": "text-single"], node("value", text: "x")),
                field("remove", "#1a2b3c4d")))
        #expect(form.fields.map(\.variable) == ["remove"])
        #expect(form.values("remove") == ["#1a2b3c4d"])
    }

    @Test func errorsDescribeTheProblem() {
        #expect(DataFormError.duplicateField("x").description.contains("'x'"))
    }
}
