import Testing
import XMLStream

@Suite struct ElementSerializationTests {
    @Test func namespaceIsWrittenOnlyWhereItChanges() {
        let iq = Element(
            "iq", namespace: "jabber:component:accept", ["type": "result"],
            children: [
                Element(
                    "query", namespace: "urn:q",
                    children: [.element(Element("item")), .element(Element("x", namespace: "urn:x"))])
            ])
        #expect(
            iq.serialized(parentNamespace: "jabber:component:accept")
                == "<iq type='result'><query xmlns='urn:q'><item/><x xmlns='urn:x'/></query></iq>")
        #expect(iq.serialized().hasPrefix("<iq xmlns='jabber:component:accept' type='result'>"))
    }

    @Test func emptyNamespaceIsWrittenAsAnUndeclaration() {
        let element = Element("a", namespace: "urn:a", children: [.element(Element("b", namespace: ""))])
        #expect(element.serialized() == "<a xmlns='urn:a'><b xmlns=''/></a>")
    }

    @Test func textAndAttributesAreEscaped() {
        let element = Element("body", ["q": "a'b\"c<d>&e"], text: "x < y & 'z' \"w\" >")
        #expect(
            element.serialized()
                == "<body q='a&apos;b&quot;c&lt;d&gt;&amp;e'>x &lt; y &amp; &apos;z&apos; &quot;w&quot; &gt;</body>")
    }

    @Test func attributeWhitespaceIsEscapedSoItSurvivesNormalisation() {
        let element = Element("x", ["v": "a\tb\nc\rd"], text: "a\tb\nc\rd")
        #expect(element.serialized() == "<x v='a&#9;b&#10;c&#13;d'>a\tb\nc&#13;d</x>")
    }

    @Test func charactersXMLForbidsBecomeReplacementCharacters() {
        #expect(XMLEscaping.escaped("a\u{0}b\u{1B}c\u{FFFE}d\u{FFFF}e") == "a\u{FFFD}b\u{FFFD}c\u{FFFD}d\u{FFFD}e")
    }

    @Test func nonASCIITextIsCopiedUnchanged() {
        #expect(XMLEscaping.escaped("Zoë, café, 😀, 日本") == "Zoë, café, 😀, 日本")
        var output = "<"
        XMLEscaping.appendEscapedAttribute("é&", to: &output)
        #expect(output == "<é&amp;")
    }

    static let roundTrips = [
        "<message xmlns='jabber:client' to='a@b' xml:lang='fr'><body>Zoë &amp; café &lt;3</body></message>",
        "<a xmlns='urn:a'><b xmlns=''><c/></b><d>x<![CDATA[<y>]]>z</d></a>",
        "<x v='tab&#9;nl&#10;cr&#13;' w=\"&quot;'\">line\r\nnext&#13;end</x>",
        "<p:a xmlns:p='urn:p'><p:b/><c xmlns='urn:c'>text<d/>more</c></p:a>",
        "<iq><query/></iq>",
    ]

    @Test(arguments: roundTrips)
    func parsedElementSurvivesSerialisation(xml: String) throws {
        let element = try Element.parse(xml)
        #expect(try Element.parse(element.serialized()) == element)
    }

    @Test(arguments: ProsodyCaptures.stanzas)
    func prosodyCaptureSurvivesSerialisation(xml: String) throws {
        let element = try Element.parse(xml)
        #expect(["iq", "message"].contains(element.name))
        #expect(!element.elements.isEmpty)
        #expect(try Element.parse(element.serialized()) == element)
    }

    @Test func streamStanzasSurviveSerialisationIntoTheStreamNamespace() throws {
        let namespace = "jabber:component:accept"
        for case .stanza(let stanza) in try events(of: Array(SampleStreams.component.utf8)) {
            let written = stanza.serialized(parentNamespace: namespace)
            let reread = try events(of: Array((SampleStreams.componentHeader + written).utf8))
            #expect(reread.last == .stanza(stanza))
        }
    }
}
