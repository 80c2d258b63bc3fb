import XMLStream

/// What stanza and stream errors share on the wire (RFC 6120 §4.9.2, §8.3.2): a condition element in
/// the errors namespace (its text, if any: a redirect's address, see-other-host's host), an optional
/// `<text/>`, and the first element of another namespace as the application condition.
struct ErrorElementParts {
    var condition: String?
    var conditionText: String?
    var text: String?
    var applicationCondition: Element?

    init(_ error: Element, conditionNamespace: String) {
        for child in error.elements {
            if child.namespace == conditionNamespace {
                if child.name == "text" {
                    text = child.text
                } else {
                    condition = child.name
                    conditionText = child.text.isEmpty ? nil : child.text
                }
            } else if applicationCondition == nil {
                applicationCondition = child
            }
        }
    }
}
