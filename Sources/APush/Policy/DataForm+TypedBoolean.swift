import XMPP

/// A boolean field as people and apps fill it in: `1`, `0`, `true`, `false` in any case, with stray
/// spaces. What else was written is kept (trimmed, lowercased) for a field that takes more words
/// (`apushCalls` = `only`) or for the error that names it.
enum SubmittedBoolean: Equatable {
    /// The field is missing.
    case absent
    case value(Bool)
    case other(String)
}

extension DataForm {
    /// The one reader of a submitted boolean (publish-options, the policy form, command forms).
    func submittedBoolean(_ field: String) -> SubmittedBoolean {
        guard let text = value(field)?.trimmed.lowercased() else { return .absent }
        return XMLBoolean.parse(text).map(SubmittedBoolean.value) ?? .other(text)
    }

    /// A submitted boolean; nil when the field is absent. A value that is no boolean is the error,
    /// naming the field.
    func typedBoolean(_ field: String) throws(PolicyError) -> Bool? {
        switch submittedBoolean(field) {
        case .absent: return nil
        case .value(let value): return value
        case .other(let text): throw PolicyError(field: field, reason: "'\(text)' is not a boolean (1, 0, true, false)")
        }
    }
}
