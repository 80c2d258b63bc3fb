import Testing
import XMLStream

@Suite struct ElementParsingTests {
    @Test func parsesAStandaloneElement() throws {
        let element = try Element.parse(
            "<?xml version='1.0' encoding='UTF-8'?>\n<iq type='set' id='1'><q xmlns='urn:q'>a &amp; b</q></iq>\n")
        #expect(
            element
                == Element(
                    "iq", attributes: [Attribute("type", "set"), Attribute("id", "1")],
                    children: [.element(Element("q", namespace: "urn:q", children: [.text("a & b")]))]))
    }

    @Test func elementOutsideEveryNamespaceHasNoNamespace() throws {
        #expect(try Element.parse("<a><b/></a>") == Element("a", children: [.element(Element("b"))]))
    }

    static let invalid: [(String, StreamParseError.Condition)] = [
        ("", .notWellFormed),
        ("   ", .notWellFormed),
        ("<a>", .notWellFormed),
        ("<a/><b/>", .notWellFormed),
        ("<a/>text", .notWellFormed),
        ("<a></b>", .notWellFormed),
        ("<!DOCTYPE a><a/>", .restrictedXML),
        ("<a>&lol;</a>", .restrictedXML),
        ("<?pi?><a/>", .restrictedXML),
        ("<a/><!-- trailing -->", .restrictedXML),
    ]

    @Test(arguments: invalid)
    func invalidDocumentThrows(xml: String, condition: StreamParseError.Condition) {
        let error = #expect(throws: StreamParseError.self) { try Element.parse(xml) }
        #expect(error?.condition == condition)
    }

    @Test func limitsApplyWithTheElementAsLevelOne() throws {
        let nested = { (levels: Int) in
            String(repeating: "<a>", count: levels) + String(repeating: "</a>", count: levels)
        }
        #expect(throws: Never.self) { try Element.parse(nested(32)) }
        #expect(throws: StreamParseError.self) { try Element.parse(nested(33)) }
        let limits = StreamLimits(maxStanzaBytes: 20)
        #expect(throws: Never.self) {
            try Element.parse("<a>" + String(repeating: "x", count: 13) + "</a>", limits: limits)
        }
        #expect(throws: StreamParseError.self) {
            try Element.parse("<a>" + String(repeating: "x", count: 14) + "</a>", limits: limits)
        }
    }
}
