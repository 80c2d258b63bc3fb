extension Element {
    /// The element as XML text. `parentNamespace` is the namespace in scope where it will be written
    /// (`jabber:component:accept` on a component stream), so an `xmlns` is written only where needed.
    public func serialized(parentNamespace: String? = nil) -> String {
        var output = ""
        write(to: &output, parentNamespace: parentNamespace)
        return output
    }

    public func write(to output: inout String, parentNamespace: String?) {
        output += "<"
        output += name
        if let namespace, namespace != parentNamespace {
            output += " xmlns='"
            XMLEscaping.appendEscapedAttribute(namespace, to: &output)
            output += "'"
        }
        for attribute in attributes {
            output += " "
            output += attribute.name
            output += "='"
            XMLEscaping.appendEscapedAttribute(attribute.value, to: &output)
            output += "'"
        }
        if children.isEmpty {
            output += "/>"
            return
        }
        output += ">"
        let scope = namespace ?? parentNamespace
        for child in children {
            switch child {
            case .element(let element): element.write(to: &output, parentNamespace: scope)
            case .text(let text): XMLEscaping.appendEscaped(text, to: &output)
            }
        }
        output += "</"
        output += name
        output += ">"
    }
}

public enum XMLEscaping {
    /// Escapes character data: `&`, `<`, `>`, both quotes, and carriage return (which a reader would
    /// turn into a line feed). The result is also safe inside a quoted attribute, but there use
    /// `appendEscapedAttribute`, which keeps tabs and line feeds from being read back as spaces.
    /// Characters XML 1.0 forbids become U+FFFD, so a stray control character cannot break the stream.
    public static func appendEscaped(_ text: String, to output: inout String) {
        append(text, inAttribute: false, to: &output)
    }

    /// Escapes a value for a single- or double-quoted attribute.
    public static func appendEscapedAttribute(_ value: String, to output: inout String) {
        append(value, inAttribute: true, to: &output)
    }

    public static func escaped(_ text: String) -> String {
        var output = ""
        appendEscaped(text, to: &output)
        return output
    }

    /// Copies runs that need no escaping in one piece.
    private static func append(_ text: String, inAttribute: Bool, to output: inout String) {
        let scalars = text.unicodeScalars
        var runStart = scalars.startIndex
        for index in scalars.indices {
            guard let replacement = replacement(for: scalars[index], inAttribute: inAttribute) else { continue }
            output += Substring(scalars[runStart..<index])
            output += replacement
            runStart = scalars.index(after: index)
        }
        output += Substring(scalars[runStart...])
    }

    private static func replacement(for scalar: Unicode.Scalar, inAttribute: Bool) -> String? {
        switch scalar {
        case "&": "&amp;"
        case "<": "&lt;"
        case ">": "&gt;"
        case "'": "&apos;"
        case "\"": "&quot;"
        case "\r": "&#13;"
        case "\n": inAttribute ? "&#10;" : nil
        case "\t": inAttribute ? "&#9;" : nil
        case "\u{0}"..."\u{1F}", "\u{FFFE}", "\u{FFFF}": "\u{FFFD}"
        default: nil
        }
    }
}
