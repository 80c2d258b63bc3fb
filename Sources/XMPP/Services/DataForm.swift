public import XMLStream

/// A XEP-0004 data form (`<x xmlns='jabber:x:data'/>`), including multi-item results
/// (`<reported/>` plus `<item/>`s) and the XEP-0068 `FORM_TYPE` field.
public struct DataForm: Sendable, Equatable {
    public enum FormType: String, Sendable, Hashable, CaseIterable {
        case form, submit, cancel, result
    }

    public enum FieldType: String, Sendable, Hashable, CaseIterable {
        case boolean, fixed, hidden
        case jidMulti = "jid-multi"
        case jidSingle = "jid-single"
        case listMulti = "list-multi"
        case listSingle = "list-single"
        case textMulti = "text-multi"
        case textPrivate = "text-private"
        case textSingle = "text-single"

        /// Only these may carry more than one `<value/>`.
        public var allowsMultipleValues: Bool { self == .jidMulti || self == .listMulti || self == .textMulti }
    }

    public struct Option: Sendable, Hashable {
        public var label: String?
        public var value: String

        public init(label: String? = nil, value: String) {
            self.label = label
            self.value = value
        }
    }

    public struct Field: Sendable, Equatable {
        /// The `var` attribute; only a `fixed` field may lack it.
        public var variable: String?
        /// Nil when the form leaves it out, which XEP-0004 reads as `text-single` (usual in submissions).
        public var type: FieldType?
        public var label: String?
        public var description: String?
        public var isRequired: Bool
        public var values: [String]
        public var options: [Option]

        public init(
            variable: String?, type: FieldType? = nil, label: String? = nil, description: String? = nil,
            isRequired: Bool = false, values: [String] = [], options: [Option] = []
        ) {
            self.variable = variable
            self.type = type
            self.label = label
            self.description = description
            self.isRequired = isRequired
            self.values = values
            self.options = options
        }

        /// A `hidden` field, as used for FORM_TYPE.
        public static func hidden(_ variable: String, _ value: String) -> Field {
            Field(variable: variable, type: .hidden, values: [value])
        }

        /// A field with one value and no declared type, as submissions usually carry.
        public static func value(_ variable: String, _ value: String) -> Field {
            Field(variable: variable, values: [value])
        }

        /// A `boolean` field, written as `1` or `0`.
        public static func boolean(_ variable: String, _ value: Bool, label: String? = nil) -> Field {
            Field(variable: variable, type: .boolean, label: label, values: [value ? "1" : "0"])
        }

        /// The first value.
        public var value: String? { values.first }
    }

    public var type: FormType
    public var title: String?
    public var instructions: [String]
    /// The fields of a single-item form (and FORM_TYPE of a multi-item one).
    public var fields: [Field]
    /// The column headers of a multi-item result.
    public var reported: [Field]?
    /// The rows of a multi-item result.
    public var items: [[Field]]

    /// `formType` becomes a hidden FORM_TYPE field in front of `fields`.
    public init(
        type: FormType, formType: String? = nil, title: String? = nil, instructions: [String] = [],
        fields: [Field] = [], reported: [Field]? = nil, items: [[Field]] = []
    ) {
        self.type = type
        self.title = title
        self.instructions = instructions
        self.fields = (formType.map { [Field.hidden(Self.formTypeVariable, $0)] } ?? []) + fields
        self.reported = reported
        self.items = items
    }

    /// A `submit` form of single values, in the order given, e.g. publish-options.
    public static func submit(formType: String?, values: KeyValuePairs<String, String>) -> DataForm {
        DataForm(type: .submit, formType: formType, fields: values.map { Field.value($0.key, $0.value) })
    }

    public static let formTypeVariable = "FORM_TYPE"

    /// The XEP-0068 FORM_TYPE: the value of the `FORM_TYPE` field, hidden or not (submitted forms
    /// often leave the type out).
    public var formType: String? { value(Self.formTypeVariable) }

    public func field(_ variable: String) -> Field? { fields.first { $0.variable == variable } }
    /// The first value of a field.
    public func value(_ variable: String) -> String? { field(variable)?.value }
    /// All values of a field; empty when the field is absent.
    public func values(_ variable: String) -> [String] { field(variable)?.values ?? [] }
    /// A boolean field's value (`1`/`true`, `0`/`false`); nil when absent or not a boolean.
    public func bool(_ variable: String) -> Bool? { value(variable).flatMap(XMLBoolean.parse) }

    /// Sets a field's values, appending the field if it is not there yet.
    public mutating func set(_ variable: String, values: [String]) {
        if let index = fields.firstIndex(where: { $0.variable == variable }) {
            fields[index].values = values
        } else {
            fields.append(Field(variable: variable, values: values))
        }
    }
}

extension DataForm {
    public var element: Element {
        var form = Element("x", namespace: Namespace.dataForms, ["type": type.rawValue])
        if let title { form.append(Self.textElement("title", title)) }
        for line in instructions { form.append(Self.textElement("instructions", line)) }
        for field in fields { form.append(field.element) }
        if let reported {
            form.append(
                Element("reported", namespace: Namespace.dataForms, children: reported.map(\.element).map(Node.element))
            )
        }
        for item in items {
            form.append(
                Element("item", namespace: Namespace.dataForms, children: item.map(\.element).map(Node.element)))
        }
        return form
    }

    /// Reads an `<x xmlns='jabber:x:data'/>`, checking what XEP-0004 requires of its structure.
    public init(element: Element) throws(DataFormError) {
        guard element.name == "x", element.namespace == Namespace.dataForms else { throw .notADataForm }
        guard let typeName = element[attribute: "type"] else { throw .missingFormType }
        guard let type = FormType(rawValue: typeName) else { throw .unknownFormType(typeName) }
        self.type = type
        title = nil
        instructions = []
        fields = []
        reported = nil
        items = []
        for child in element.elements where child.namespace == Namespace.dataForms {
            switch child.name {
            case "title": title = child.text
            case "instructions": instructions.append(child.text)
            case "field":
                // XEP-0004 §3.2: a receiver ignores what it does not understand. A field without a var
                // can be nothing but a `fixed` line, which slixmpp's Form.reply() sends back untyped.
                guard child[attribute: "var"] != nil || child[attribute: "type"] == DataForm.FieldType.fixed.rawValue
                else { continue }
                fields.append(try Field(element: child))
            case "reported":
                guard reported == nil else { throw .duplicateReported }
                reported = try Self.fieldSet(child)
            case "item": items.append(try Self.fieldSet(child))
            default: continue  // XEP-0004 lets other specifications extend the form
            }
        }
        try Self.checkUniqueVariables(fields)
        if !items.isEmpty, reported == nil { throw .itemsWithoutReported }
    }

    private static func fieldSet(_ element: Element) throws(DataFormError) -> [Field] {
        var fields: [Field] = []
        for child in element.elements where child.name == "field" && child.namespace == Namespace.dataForms {
            fields.append(try Field(element: child))
        }
        try checkUniqueVariables(fields)
        return fields
    }

    private static func checkUniqueVariables(_ fields: [Field]) throws(DataFormError) {
        var seen = Set<String>()
        for case let variable? in fields.map(\.variable) where !seen.insert(variable).inserted {
            throw .duplicateField(variable)
        }
    }

    private static func textElement(_ name: String, _ text: String) -> Element {
        Element(name, namespace: Namespace.dataForms, [:], text: text)
    }
}

extension DataForm.Field {
    public var element: Element {
        var field = Element(
            "field", namespace: Namespace.dataForms,
            ["var": variable, "type": type?.rawValue, "label": label])
        let namespace = Namespace.dataForms
        if let description { field.append(Element("desc", namespace: namespace, [:], text: description)) }
        if isRequired { field.append(Element("required", namespace: namespace)) }
        for value in values { field.append(Element("value", namespace: namespace, [:], text: value)) }
        for option in options {
            field.append(
                Element(
                    "option", namespace: namespace, ["label": option.label],
                    children: [Element("value", namespace: namespace, [:], text: option.value)]))
        }
        return field
    }

    public init(element: Element) throws(DataFormError) {
        let namespace = Namespace.dataForms
        var type: DataForm.FieldType?
        if let typeName = element[attribute: "type"] {
            guard let known = DataForm.FieldType(rawValue: typeName) else { throw .unknownFieldType(typeName) }
            type = known
        }
        let variable = element[attribute: "var"]
        guard variable != nil || type == .fixed else { throw .fieldWithoutVariable }
        var values: [String] = []
        var options: [DataForm.Option] = []
        var description: String?
        var isRequired = false
        for child in element.elements where child.namespace == namespace {
            switch child.name {
            case "value": values.append(child.text)
            case "desc": description = child.text
            case "required": isRequired = true
            case "option":
                guard let value = child.child("value", namespace: namespace) else {
                    throw .optionWithoutValue(field: variable)
                }
                options.append(DataForm.Option(label: child[attribute: "label"], value: value.text))
            default: continue
            }
        }
        // A submitted form may leave out field types (XEP-0004 §3.2): only a field that says it is
        // single-valued may not carry several values.
        if values.count > 1, let type, !type.allowsMultipleValues {
            throw .multipleValuesInSingleValuedField(variable ?? "")
        }
        if type == .boolean, let value = values.first, XMLBoolean.parse(value) == nil {
            throw .invalidBoolean(field: variable ?? "", value: value)
        }
        self.init(
            variable: variable, type: type, label: element[attribute: "label"], description: description,
            isRequired: isRequired, values: values, options: options)
    }
}

/// Why an element is not a well-formed XEP-0004 data form.
public enum DataFormError: Error, Sendable, Hashable, CustomStringConvertible {
    case notADataForm
    case missingFormType
    case unknownFormType(String)
    case unknownFieldType(String)
    case fieldWithoutVariable
    case duplicateField(String)
    case multipleValuesInSingleValuedField(String)
    case invalidBoolean(field: String, value: String)
    case optionWithoutValue(field: String?)
    case duplicateReported
    case itemsWithoutReported

    public var description: String {
        switch self {
        case .notADataForm: "not an <x xmlns='jabber:x:data'/> element"
        case .missingFormType: "the form has no type attribute"
        case .unknownFormType(let type): "unknown form type '\(type)'"
        case .unknownFieldType(let type): "unknown field type '\(type)'"
        case .fieldWithoutVariable: "a field other than 'fixed' has no var"
        case .duplicateField(let variable): "the field '\(variable)' appears twice"
        case .multipleValuesInSingleValuedField(let variable):
            "the single-valued field '\(variable)' has several values"
        case .invalidBoolean(let field, _): "the boolean field '\(field)' has a value that is not 0, 1, false or true"
        case .optionWithoutValue(let field): "an option of the field '\(field ?? "")' has no value"
        case .duplicateReported: "the form has more than one <reported/>"
        case .itemsWithoutReported: "the form has <item/>s but no <reported/>"
        }
    }
}

/// XML Schema booleans as XMPP uses them: `1`/`true` and `0`/`false`.
public enum XMLBoolean {
    public static func parse(_ string: String) -> Bool? {
        switch string {
        case "1", "true": true
        case "0", "false": false
        default: nil
        }
    }
}
