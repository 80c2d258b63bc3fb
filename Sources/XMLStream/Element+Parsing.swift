extension Element {
    /// Parses one standalone element, such as a test stanza or a fixture, under the same rules and
    /// limits as a stream: the element counts as a stanza (nesting level 1, its bytes against
    /// `maxStanzaBytes`). Text or markup after it is an error; an XML declaration before it is not.
    public static func parse(_ xml: String, limits: StreamLimits = .init()) throws(StreamParseError) -> Element {
        try StreamParser(limits: limits, mode: .document).parseDocument(xml.utf8)
    }
}
