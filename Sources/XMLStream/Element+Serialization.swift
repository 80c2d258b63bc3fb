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
            XMLEscaping.appendEscaped(namespace, to: &output)
            output += "'"
        }
        for attribute in attributes {
            output += " "
            output += attribute.name
            output += "='"
            XMLEscaping.appendEscaped(attribute.value, to: &output)
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
    /// Escapes text for use both as character data and inside a single- or double-quoted attribute.
    public static func appendEscaped(_ text: String, to output: inout String) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "'": output += "&apos;"
            case "\"": output += "&quot;"
            default: output.unicodeScalars.append(scalar)
            }
        }
    }

    public static func escaped(_ text: String) -> String {
        var output = ""
        appendEscaped(text, to: &output)
        return output
    }
}
