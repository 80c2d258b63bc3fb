import Testing
import XMLStream

/// Streams used by the chunking tests.
enum SampleStreams {
    static let componentHeader =
        "<stream:stream xmlns='jabber:component:accept' xmlns:stream='http://etherx.jabber.org/streams'"
        + " to='apush.localhost'>"

    /// A component stream: multi-byte UTF-8, escapes in text and attributes, CDATA, prefixes.
    static let component = """
        <?xml version='1.0'?><stream:stream xmlns='jabber:component:accept' \
        xmlns:stream='http://etherx.jabber.org/streams' from='apush.localhost' id='s1'>
        <handshake/>
        <message from='zoë@localhost' to='apush.localhost' xml:lang='fr' id='a&amp;b&lt;c&apos;d&#38;e'>\
        <body>Zoë &amp; café &lt;3 &apos;oui&apos; &#x1F600;</body>\
        <data><![CDATA[<not-markup> & ]]>after</data>\
        <p:item xmlns:p='urn:example:prefixed'><p:inner>x</p:inner></p:item>\
        <plain xmlns=''/></message>
        \t<iq type='get' id='q1'><query xmlns='http://jabber.org/protocol/disco#info'/></iq> \
        </stream:stream>
        """

    /// A client stream with prefixed stream elements, keepalive whitespace and CR LF line ends.
    static let client =
        "<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' version=\"1.0\">"
        + "<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>\r\n \n"
        + "<presence/><message type='chat'><body>line one\r\nline two — ünïcödé</body></message>"

    static let all = [component, client]
}

/// Feeds the whole input in one call and collects the events.
func events(of input: some Collection<UInt8>, limits: StreamLimits = .init()) throws(StreamParseError) -> [StreamEvent]
{
    try StreamParser(limits: limits).feed(input)
}

/// Feeds the input in the given pieces and collects the events.
func events(ofPieces pieces: [ArraySlice<UInt8>], limits: StreamLimits = .init()) throws(StreamParseError)
    -> [StreamEvent]
{
    let parser = StreamParser(limits: limits)
    var result: [StreamEvent] = []
    for piece in pieces { result += try parser.feed(piece) }
    return result
}

/// The error that ends a parse of the input fed in the given pieces, if any.
func error(ofPieces pieces: [ArraySlice<UInt8>], limits: StreamLimits = .init()) -> StreamParseError? {
    do {
        _ = try events(ofPieces: pieces, limits: limits)
        return nil
    } catch {
        return error
    }
}

/// The error a parse ends with, whether the input comes whole or byte by byte.
func errors(of input: [UInt8], limits: StreamLimits = .init()) -> (
    whole: StreamParseError?, bytewise: StreamParseError?
) {
    (
        error(ofPieces: [input[...]], limits: limits),
        error(ofPieces: input.indices.map { input[$0...$0] }, limits: limits)
    )
}

func chunks(of bytes: [UInt8], size: Int) -> [ArraySlice<UInt8>] {
    stride(from: 0, to: bytes.count, by: size).map { bytes[$0..<min($0 + size, bytes.count)] }
}

@Suite struct StreamParserTests {
    @Test func componentStreamGivesTheExpectedEvents() throws {
        let namespace = "jabber:component:accept"
        let message = Element(
            "message", namespace: namespace,
            attributes: [
                Attribute("from", "zoë@localhost"), Attribute("to", "apush.localhost"), Attribute("xml:lang", "fr"),
                Attribute("id", "a&b<c'd&e"),
            ],
            children: [
                .element(Element("body", namespace: namespace, children: [.text("Zoë & café <3 'oui' 😀")])),
                .element(Element("data", namespace: namespace, children: [.text("<not-markup> & after")])),
                .element(
                    Element(
                        "item", namespace: "urn:example:prefixed",
                        children: [
                            .element(Element("inner", namespace: "urn:example:prefixed", children: [.text("x")]))
                        ])),
                .element(Element("plain", namespace: "")),
            ])
        let expected: [StreamEvent] = [
            .streamStart(
                Element(
                    "stream", namespace: "http://etherx.jabber.org/streams",
                    attributes: [Attribute("from", "apush.localhost"), Attribute("id", "s1")])),
            .stanza(Element("handshake", namespace: namespace)),
            .stanza(message),
            .stanza(
                Element(
                    "iq", namespace: namespace, attributes: [Attribute("type", "get"), Attribute("id", "q1")],
                    children: [.element(Element("query", namespace: "http://jabber.org/protocol/disco#info"))])),
            .streamEnd,
        ]
        #expect(try events(of: Array(SampleStreams.component.utf8)) == expected)
    }

    @Test func clientStreamKeepsPrefixedStreamElementsAndNormalisesLineEnds() throws {
        let result = try events(of: Array(SampleStreams.client.utf8))
        #expect(result.count == 4)
        guard case .stanza(let features) = result[1], case .stanza(let message) = result[3] else {
            Issue.record("unexpected events \(result)")
            return
        }
        #expect(features.name == "features")
        #expect(features.namespace == "http://etherx.jabber.org/streams")
        #expect(features.elements.map(\.namespace) == ["urn:ietf:params:xml:ns:xmpp-bind"])
        #expect(message.child("body")?.text == "line one\nline two — ünïcödé")
    }

    @Test(arguments: SampleStreams.all)
    func everyTwoPieceSplitGivesTheSameEvents(_ input: String) throws {
        let bytes = Array(input.utf8)
        let whole = try events(of: bytes)
        for split in 0...bytes.count {
            let pieces = try events(ofPieces: [bytes[..<split], bytes[split...]])
            #expect(pieces == whole, "split at byte \(split)")
        }
    }

    @Test(arguments: SampleStreams.all)
    func byteByByteGivesTheSameEvents(_ input: String) throws {
        let bytes = Array(input.utf8)
        #expect(try events(ofPieces: bytes.indices.map { bytes[$0...$0] }) == events(of: bytes))
    }

    @Test func eachEventArrivesWithTheByteThatCompletesIt() throws {
        let parser = StreamParser()
        let header = Array(SampleStreams.componentHeader.utf8)
        #expect(try parser.feed(header.dropLast()).isEmpty)
        #expect(try parser.feed(header.suffix(1)).count == 1)
        let stanza = Array("<handshake/>".utf8)
        #expect(try parser.feed(stanza.dropLast()).isEmpty)
        #expect(
            try parser.feed(stanza.suffix(1)) == [.stanza(Element("handshake", namespace: "jabber:component:accept"))])
        let end = Array("</stream:stream>".utf8)
        #expect(try parser.feed(end.dropLast()).isEmpty)
        #expect(try parser.feed(end.suffix(1)) == [.streamEnd])
    }

    // MARK: - Limits

    /// A stanza of exactly `size` bytes.
    static func message(bytes size: Int) -> String {
        let open = "<message><body>"
        let close = "</body></message>"
        return open + String(repeating: "a", count: size - open.utf8.count - close.utf8.count) + close
    }

    @Test(arguments: [262_143, 262_144])
    func stanzaWithinTheSizeLimitIsAccepted(size: Int) throws {
        let stanza = Self.message(bytes: size)
        #expect(stanza.utf8.count == size)
        let bytes = Array((SampleStreams.componentHeader + "\n  " + stanza).utf8)
        let expected = try events(of: bytes)
        #expect(expected.count == 2)
        #expect(try events(ofPieces: chunks(of: bytes, size: 4_096)) == expected)
    }

    static let oversized = StreamParseError(condition: .policyViolation, text: "a stanza exceeds 262144 bytes")

    /// The start tag the reader keeps of a stanza it skips: name, namespace and attributes only.
    static let publishHead = Element(
        "iq", namespace: "jabber:component:accept",
        ["type": "set", "id": "big", "from": "example.org", "to": "apush.localhost"])

    static func publish(textBytes: Int) -> String {
        "<iq type='set' id='big' from='example.org' to='apush.localhost'><pubsub xmlns='p'><x>"
            + String(repeating: "&apos;", count: textBytes / 6) + "</x><y a='b'/></pubsub></iq>"
    }

    @Test func stanzaOverTheSizeLimitIsSkippedAndTheNextOneIsRead() throws {
        let bytes = Array(
            (SampleStreams.componentHeader + Self.publish(textBytes: 300_000) + " <iq type='get' id='next'/>").utf8)
        let expected: [StreamEvent] = [
            .streamStart(Element("stream", namespace: "http://etherx.jabber.org/streams", ["to": "apush.localhost"])),
            .skippedStanza(Self.publishHead, reason: Self.oversized),
            .stanza(Element("iq", namespace: "jabber:component:accept", ["type": "get", "id": "next"])),
        ]
        #expect(try events(of: bytes) == expected)
        #expect(try events(ofPieces: chunks(of: bytes, size: 4_096)) == expected)
        #expect(try events(ofPieces: chunks(of: bytes, size: 65_536)) == expected)
    }

    @Test func stanzaJustOverTheSizeLimitIsSkippedWhenItsEndArrives() throws {
        // The last bytes of the closing tag push it over: it is complete, yet still refused.
        let bytes = Array((SampleStreams.componentHeader + Self.message(bytes: 262_145) + "<presence/>").utf8)
        let read = try events(of: bytes)
        #expect(read.count == 3)
        #expect(
            read[1] == .skippedStanza(Element("message", namespace: "jabber:component:accept"), reason: Self.oversized))
        #expect(try events(ofPieces: chunks(of: bytes, size: 4_096)) == read)
    }

    @Test func skippedStanzaIsNeverBufferedHoweverLargeItIs() throws {
        let parser = StreamParser(limits: StreamLimits(maxStanzaBytes: 1_000, maxSkippedTagBytes: 2_000))
        _ = try parser.feed(Array((SampleStreams.componentHeader + "<message id='m'><body>").utf8))
        let chunk = Array(String(repeating: "&apos;<b/>x", count: 6_000).utf8)
        for _ in 0..<300 { #expect(try parser.feed(chunk).isEmpty) }  // 20 MB, never more than 2 kB held
        #expect(
            try parser.feed(Array("</body></message><iq id='n'/>".utf8)) == [
                .skippedStanza(
                    Element("message", namespace: "jabber:component:accept", ["id": "m"]),
                    reason: StreamParseError(condition: .policyViolation, text: "a stanza exceeds 1000 bytes")),
                .stanza(Element("iq", namespace: "jabber:component:accept", ["id": "n"])),
            ])
    }

    @Test(arguments: [1, 16_384, 65_536])
    func skippedTextIsReadAsItComesNotHeldUntilItsEnd(chunkSize: Int) throws {
        // libxml2 hands text over as it reads it, so a long text keeps nothing held: no tag limit applies.
        let parser = StreamParser(limits: StreamLimits(maxStanzaBytes: 1_000, maxSkippedTagBytes: 2_000))
        _ = try parser.feed(Array((SampleStreams.componentHeader + "<message id='m'><body>").utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: chunkSize)
        for _ in 0..<(chunkSize == 1 ? 5_000 : 10_485_760 / chunkSize) { #expect(try parser.feed(chunk).isEmpty) }
        guard case .skippedStanza(let head, _) = try parser.feed(Array("</body></message>".utf8)).first else {
            Issue.record("the stanza was not reported")
            return
        }
        #expect(head[attribute: "id"] == "m")
    }

    @Test func skippedStanzaReadByteByByteGivesTheSameEvents() throws {
        let limits = StreamLimits(maxStanzaBytes: 200)
        let bytes = Array((SampleStreams.componentHeader + Self.message(bytes: 500) + "<iq id='n'/>").utf8)
        let whole = try events(of: bytes, limits: limits)
        #expect(whole.count == 3)
        #expect(try events(ofPieces: bytes.indices.map { bytes[$0...$0] }, limits: limits) == whole)
    }

    @Test func oneTagOverTheSkippedTagLimitEndsTheStream() throws {
        // While a stanza is skipped libxml2 still holds each tag whole until its `>`: that is bounded too.
        let limits = StreamLimits(maxStanzaBytes: 1_000, maxSkippedTagBytes: 5_000)
        let parser = StreamParser(limits: limits)
        _ = try parser.feed(Array((SampleStreams.componentHeader + "<message><x a='").utf8))
        #expect(throws: StreamParseError(condition: .policyViolation, text: "a tag exceeds 5000 bytes")) {
            for _ in 0..<10 { _ = try parser.feed([UInt8](repeating: UInt8(ascii: "a"), count: 1_000)) }
        }
    }

    @Test func endlessStanzaIsSkippedFromTheFirstByteOverTheLimit() throws {
        let parser = StreamParser(limits: StreamLimits(maxStanzaBytes: 150))
        _ = try parser.feed(Array(SampleStreams.componentHeader.utf8))
        let stanza = Array(("<message><body>" + String(repeating: "a", count: 200)).utf8)
        for byte in stanza { #expect(try parser.feed([byte]).isEmpty) }
        #expect(
            try parser.feed(Array("</body></message>".utf8)) == [
                .skippedStanza(
                    Element("message", namespace: "jabber:component:accept"),
                    reason: StreamParseError(condition: .policyViolation, text: "a stanza exceeds 150 bytes"))
            ])
    }

    @Test func endlessStartTagOfAStanzaEndsTheStream() throws {
        // Until its start tag ends there is no stanza to answer: nothing to skip to.
        let parser = StreamParser()
        _ = try parser.feed(Array((SampleStreams.componentHeader + "<message id='").utf8))
        let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 65_536)
        var fed = "<message id='".utf8.count
        while fed + chunk.count <= 262_144 {
            _ = try parser.feed(chunk)
            fed += chunk.count
        }
        #expect(throws: Self.oversized) { try parser.feed(chunk) }
    }

    @Test func oversizedDocumentIsStillAnError() {
        // `Element.parse` reads one element: there is nothing to skip to.
        let text = "<a>" + String(repeating: "b", count: 262_145) + "</a>"
        #expect(throws: Self.oversized) { try Element.parse(text) }
    }

    @Test func whitespaceBetweenStanzasDoesNotCountTowardsTheSizeLimit() throws {
        // The stream header is held to the same limit, so it must fit too.
        let limits = StreamLimits(maxStanzaBytes: 150)
        let bytes = Array(
            (SampleStreams.componentHeader + String(repeating: " \n", count: 500) + Self.message(bytes: 150)).utf8)
        #expect(try events(of: bytes, limits: limits).count == 2)
        #expect(try events(ofPieces: bytes.indices.map { bytes[$0...$0] }, limits: limits).count == 2)
    }

    static func nested(_ levels: Int) -> String {
        String(repeating: "<a>", count: levels) + String(repeating: "</a>", count: levels)
    }

    @Test func stanzaNestingThirtyTwoLevelsIsAccepted() throws {
        let bytes = Array((SampleStreams.componentHeader + Self.nested(32)).utf8)
        let result = try events(of: bytes)
        guard case .stanza(var element) = result.last else {
            Issue.record("no stanza in \(result)")
            return
        }
        var levels = 1
        while let child = element.elements.first {
            element = child
            levels += 1
        }
        #expect(levels == 32)
    }

    @Test func stanzaNestingThirtyThreeLevelsIsSkippedAndTheNextOneIsRead() throws {
        let bytes = Array((SampleStreams.componentHeader + Self.nested(33) + "<iq id='n'/>").utf8)
        let expected: [StreamEvent] = [
            .streamStart(Element("stream", namespace: "http://etherx.jabber.org/streams", ["to": "apush.localhost"])),
            .skippedStanza(
                Element("a", namespace: "jabber:component:accept"),
                reason: StreamParseError(condition: .policyViolation, text: "elements nest deeper than 32 levels")),
            .stanza(Element("iq", namespace: "jabber:component:accept", ["id": "n"])),
        ]
        #expect(try events(of: bytes) == expected)
        #expect(try events(ofPieces: bytes.indices.map { bytes[$0...$0] }) == expected)
    }

    @Test func nestingPastTheSkippedDepthLimitEndsTheStream() {
        // libxml2 keeps a frame per open element even while skipping: that is bounded too.
        let limits = StreamLimits(maxSkippedDepth: 100)
        let errors = errors(of: Array((SampleStreams.componentHeader + Self.nested(100)).utf8), limits: limits)
        #expect(
            errors.whole == StreamParseError(condition: .policyViolation, text: "elements nest deeper than 100 levels"))
        #expect(errors.bytewise == errors.whole)
    }

    @Test func customDepthLimitCountsTheStanzaAsLevelOne() throws {
        let limits = StreamLimits(maxDepth: 2)
        let read = try events(of: Array((SampleStreams.componentHeader + Self.nested(2)).utf8), limits: limits)
        #expect(read.count == 2)
        guard case .stanza = read.last else {
            Issue.record("\(read)")
            return
        }
        let deeper = try events(of: Array((SampleStreams.componentHeader + Self.nested(3)).utf8), limits: limits)
        guard case .skippedStanza(_, let reason) = deeper.last else {
            Issue.record("\(deeper)")
            return
        }
        #expect(reason.condition == .policyViolation)
    }

    // MARK: - Errors

    static let malformedStreams: [(String, StreamParseError.Condition)] = [
        ("<!DOCTYPE stream:stream>" + SampleStreams.componentHeader, .restrictedXML),
        ("<!DOCTYPE s SYSTEM 'http://example.com/evil.dtd'>" + SampleStreams.componentHeader, .restrictedXML),
        ("<!DOCTYPE s [<!ENTITY x 'boom'>]>" + SampleStreams.componentHeader + "<a>&x;</a>", .restrictedXML),
        (SampleStreams.componentHeader + "<message><body>&x;</body></message>", .restrictedXML),
        (SampleStreams.componentHeader + "<message id='&x;'/>", .restrictedXML),
        ("<?xml version='1.0'?><?pi data?>" + SampleStreams.componentHeader, .restrictedXML),
        (SampleStreams.componentHeader + "<message><?pi data?></message>", .restrictedXML),
        (SampleStreams.componentHeader + "<message><!-- note --></message>", .restrictedXML),
        (SampleStreams.componentHeader + "<message><!ENTITY x 'y'></message>", .notWellFormed),
        (SampleStreams.componentHeader + "<message></iq>", .notWellFormed),
        (SampleStreams.componentHeader + "<message><body></message></body>", .notWellFormed),
        (SampleStreams.componentHeader + "<x:message/>", .notWellFormed),
        (SampleStreams.componentHeader + "<message id='1' id='2'/>", .notWellFormed),
        // libxml2 waits for a `;` before judging a bare `&` (the size limit bounds that wait).
        (SampleStreams.componentHeader + "<message>fish & chips</message><iq id='x;'/>", .notWellFormed),
        (SampleStreams.componentHeader + "<message>&#0;</message>", .notWellFormed),
        (SampleStreams.componentHeader + "<message>\u{1}</message>", .notWellFormed),
        (SampleStreams.componentHeader + "</stream:stream><message/>", .notWellFormed),
        (SampleStreams.componentHeader + "</stream:stream>junk", .notWellFormed),
        ("<stream xmlns='jabber:client'><message/>", .invalidNamespace),
        ("<stream:features xmlns:stream='http://etherx.jabber.org/streams'/>", .invalidNamespace),
        ("junk", .notWellFormed),
    ]

    @Test(arguments: malformedStreams)
    func malformedStreamEndsWithTheRightCondition(input: String, condition: StreamParseError.Condition) {
        let errors = errors(of: Array(input.utf8))
        #expect(errors.whole?.condition == condition)
        #expect(errors.bytewise == errors.whole)
    }

    static let badUTF8: [[UInt8]] = [
        [0xFF], [0xC3, 0x28], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82],
    ]

    @Test(arguments: badUTF8)
    func badUTF8IsNotWellFormed(sequence: [UInt8]) {
        let header = Array(SampleStreams.componentHeader.utf8)
        for stanza in [
            Array("<message><body>a".utf8) + sequence + Array("b</body></message>".utf8),
            Array("<message id='a".utf8) + sequence + Array("b'/>".utf8),
        ] {
            let errors = errors(of: header + stanza)
            #expect(errors.whole?.condition == .notWellFormed)
            #expect(errors.bytewise?.condition == .notWellFormed)
        }
    }

    @Test func everyFeedAfterAnErrorThrowsTheSameError() throws {
        let parser = StreamParser()
        _ = try parser.feed(Array(SampleStreams.componentHeader.utf8))
        var first: StreamParseError?
        do { _ = try parser.feed(Array("<message></iq>".utf8)) } catch { first = error }
        let error = try #require(first)
        #expect(error.condition == .notWellFormed)
        for more in ["<message/>", "</stream:stream>", "\u{FF}junk<<<", ""] {
            #expect(throws: error) { try parser.feed(Array(more.utf8)) }
        }
    }

    @Test func resetAfterAnErrorStartsAFreshStream() throws {
        let parser = StreamParser()
        #expect(throws: StreamParseError.self) { try parser.feed(Array("<!DOCTYPE x>".utf8)) }
        parser.reset()
        #expect(try parser.feed(Array(SampleStreams.component.utf8)) == events(of: Array(SampleStreams.component.utf8)))
    }

    @Test func resetInTheMiddleOfAStanzaForgetsIt() throws {
        let parser = StreamParser(limits: StreamLimits(maxStanzaBytes: 1_000))
        _ = try parser.feed(
            Array((SampleStreams.componentHeader + "<message><body>" + String(repeating: "a", count: 900)).utf8))
        parser.reset()
        let bytes = Array(SampleStreams.component.utf8)
        #expect(try parser.feed(bytes) == events(of: bytes))
    }

    // Found by the stream-parser fuzz target: libxml2 hands a namespace URI with `&amp;` over as `&#38;`.
    @Test(arguments: ["urn:a&amp;b", "urn:a&#38;b", "urn:a&#x26;b"])
    func anAmpersandInANamespaceIsReadAsOneAmpersand(_ written: String) throws {
        let stanza = "<iq xmlns='jabber:component:accept'><q xmlns='\(written)'/></iq>"
        let streamed = try StreamParser().feed(Array((SampleStreams.componentHeader + stanza).utf8))
        guard case .stanza(let iq) = streamed.last else {
            Issue.record("expected a stanza, got \(streamed)")
            return
        }
        #expect(iq.elements.first?.namespace == "urn:a&b")
        #expect(try Element.parse(stanza) == iq)
        #expect(try Element.parse(iq.serialized()) == iq)
    }
}
