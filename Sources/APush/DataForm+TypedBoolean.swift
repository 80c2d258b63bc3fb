import XMPP

extension DataForm {
    /// A submitted boolean as people type it (any case, stray spaces); nil when the field is absent.
    /// A value that is no boolean is the error, naming the field.
    func typedBoolean(_ field: String) throws(PolicyError) -> Bool? {
        guard let value = value(field) else { return nil }
        guard let parsed = XMLBoolean.parse(value.trimmed.lowercased()) else {
            throw PolicyError(field: field, reason: "'\(value)' is not a boolean (1, 0, true, false)")
        }
        return parsed
    }
}
