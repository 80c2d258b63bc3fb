import Foundation
import Testing
import XMLStream

@testable import XMPP

private let pubsub = "{http://jabber.org/protocol/pubsub}pubsub"
private let notification = pubsub + "/publish/item/{urn:xmpp:push:0}notification"
private let forwardedMessage = notification + "/{urn:xmpp:forward:0}forwarded/{jabber:client}message"
private let publishOptions = pubsub + #"/publish-options/\{http://jabber.org/protocol/pubsub#publish-options}submit"#
private let summary = notification + #"/\{urn:xmpp:push:summary}"#

struct QueryCase: Sendable, CustomTestStringConvertible {
    let fixture: String
    let path: String
    let expected: [QueryValue]

    init(_ fixture: String, _ path: String, _ expected: [QueryValue]) {
        self.fixture = fixture
        self.path = path
        self.expected = expected
    }

    var testDescription: String { "\(fixture): \(path)" }
}

@Suite struct QueryTests {
    static let fixtureCases: [QueryCase] = [
        // Prosody's util.stanza paths.
        QueryCase("prosodyStockPublish", "@type", [.string("set")]),
        QueryCase("prosodyStockPublish", pubsub + "/publish@node", [.string("tok123")]),
        QueryCase("prosodyBridgePublish", forwardedMessage + "/body#", [.string("Are you there?")]),
        QueryCase("prosodyBridgePublish", forwardedMessage + "@from", [.string("bob@localhost/laptop")]),
        QueryCase("ejabberdErrorReply", "error@type", [.string("wait")]),
        QueryCase(
            "ejabberdDiscoReply", "{http://jabber.org/protocol/disco#info}query/feature@var",
            [.string("urn:xmpp:push:0")]),
        // Rooted queries select the element itself.
        QueryCase("prosodyStockPublish", "/@to", [.string("apush.localhost")]),
        QueryCase("prosodyStockPublish", "/{jabber:component:accept}iq@from", [.string("localhost")]),
        QueryCase("prosodyStockPublish", "/{jabber:client}iq@from", []),
        QueryCase("prosodyStockPublish", "/message@from", []),
        QueryCase(
            "prosodyStockPublish", "/<type=set>@id",
            [.string("20ab3be121224fa65a880106ccfceb8b604b04115231312b10068684274d8999")]),
        QueryCase("prosodyStockPublish", "/<type=get>@id", []),
        // A segment without {ns} is in its parent's namespace, not any namespace.
        QueryCase("prosodyStockPublish", "pubsub", []),
        QueryCase("prosodyBridgePublish", notification + "/forwarded", []),
        // The publish-options sub-query.
        QueryCase("prosodyStockPublish", publishOptions + #"@pushModule\"#, [.string("apush")]),
        QueryCase("ejabberdPublish", publishOptions + #"@pushModule\"#, [.string("apns")]),
        QueryCase("prosodyStockPublish", publishOptions + #"@apushCalls\|bool"#, [.bool(true)]),
        QueryCase("ejabberdPublish", publishOptions + #"@apushRead\|bool"#, [.bool(true)]),
        QueryCase(
            "prosodyStockPublish", publishOptions + #"@apushEncryptionPublicKey\|base64"#,
            [.bytes(Fixtures.publicKeyBytes)]),
        QueryCase("prosodyStockPublish", publishOptions + #"@absent\"#, []),
        QueryCase("prosodyStockPublish", pubsub + #"/publish-options/\{urn:other}@pushModule\"#, []),
        QueryCase("prosodyStockPublish", pubsub + #"/publish-options/\form@pushModule\"#, []),
        QueryCase("prosodyStockPublish", pubsub + #"/publish-options/\*@pushModule\"#, [.string("apush")]),
        QueryCase("prosodyStockPublish", pubsub + #"/publish-options/\{*}*@pushModule\"#, [.string("apush")]),
        QueryCase("prosodyStockPublish", pubsub + #"/publish-options/\@pushModule\"#, [.string("apush")]),
        QueryCase(
            "prosodyStockPublish", pubsub + #"/publish-options/{jabber:x:data}x\@pushModule\"#,
            [.string("apush")]),
        QueryCase(
            "prosodyBridgeRegistered",
            #"{urn:xmpp:apush:bridge:0}registered/{urn:xmpp:push:0}enable/\{http://jabber.org/protocol/pubsub#publish-options}@pushModule\"#,
            [.string("apush")]),
        QueryCase(
            "ejabberdDelegatedEnable",
            #"{urn:xmpp:delegation:1}delegation/{urn:xmpp:forward:0}forwarded/{jabber:client}iq/{urn:xmpp:push:0}enable/\{http://jabber.org/protocol/pubsub#publish-options}submit@apushCalls\|bool"#,
            [.bool(true)]),
        // The XEP-0357 summary: Prosody sends a `form`, ejabberd a `submit`.
        QueryCase("prosodyStockPublish", summary + #"@message-count\|int"#, [.int(1)]),
        QueryCase("prosodyStockPublish", summary + #"@message-count\|uint"#, [.int(1)]),
        QueryCase("prosodyStockPublish", summary + #"@pending-subscription-count\"#, []),
        QueryCase("prosodyStockPublish", summary + #"@last-message-sender\"#, [.string("bob@localhost/laptop")]),
        QueryCase(
            "prosodyStockPublish", notification + #"/\{urn:xmpp:push:summary}form@message-count\"#,
            [.string("1")]),
        QueryCase("prosodyStockPublish", notification + #"/\{urn:xmpp:push:summary}submit@message-count\"#, []),
        QueryCase(
            "ejabberdPublish", notification + #"/\{urn:xmpp:push:summary}submit@last-message-body\"#,
            [.string("New message")]),
        QueryCase("ejabberdEmptyPublish", summary + #"@last-message-body\"#, []),
        QueryCase("ejabberdEmptyPublish", notification + "/{*}*", []),
        QueryCase("prosodyBridgeCarbon", summary + #"@last-message-body\"#, []),
        // The forwarded message of the bridge.
        QueryCase(
            "prosodyBridgePublish", forwardedMessage + "/{urn:xmpp:delay}delay@stamp|datetime",
            [.date(Date(timeIntervalSince1970: 1_795_968_361))]),
        QueryCase(
            "prosodyBridgePublish", forwardedMessage + "/{*}*$",
            ["body", "request", "markable", "origin-id", "stanza-id", "delay"].map(QueryValue.string)),
        QueryCase(
            "prosodyBridgePublish", forwardedMessage + "/{*}!body$",
            ["request", "markable", "origin-id", "stanza-id", "delay"].map(QueryValue.string)),
        QueryCase(
            "prosodyBridgePublish", forwardedMessage + "/{urn:xmpp:sid:0}*@id",
            [.string("m1"), .string("cYxKc5Y3-RR7bAh-iqjNqYcw")]),
        QueryCase(
            "prosodyBridgePublish", forwardedMessage + "/{urn:xmpp:sid:0}*<by=alice@localhost>@id",
            [.string("cYxKc5Y3-RR7bAh-iqjNqYcw")]),
        QueryCase(
            "prosodyBridgePublish", forwardedMessage + "/{urn:xmpp:sid:0}*<by>@id",
            [.string("cYxKc5Y3-RR7bAh-iqjNqYcw")]),
        QueryCase(
            "prosodyBridgePublish", notification + "/{urn:xmpp:apush:bridge:0}account@important|bool",
            [.bool(true)]),
        QueryCase(
            "prosodyBridgeCarbon", notification + "/{urn:xmpp:apush:bridge:0}account@important|bool",
            [.bool(false)]),
        QueryCase(
            "prosodyBridgeCall", forwardedMessage + "/{urn:xmpp:jingle-message:0}propose@id",
            [.string("sess1")]),
        QueryCase(
            "prosodyBridgeCall",
            forwardedMessage + "/{urn:xmpp:jingle-message:0}propose/{urn:xmpp:jingle:apps:rtp:1}description@media",
            [.string("audio")]),
        QueryCase("prosodyBridgeCall", forwardedMessage + "/body#", []),
        QueryCase(
            "prosodyBridgeCarbon",
            forwardedMessage
                + "/{urn:xmpp:carbons:2}sent/{urn:xmpp:forward:0}forwarded/{jabber:client}message/{urn:xmpp:chat-markers:0}displayed@id",
            [.string("m1")]),
        QueryCase(
            "prosodyBridgeCarbon",
            forwardedMessage + "/{urn:xmpp:carbons:2}sent/{urn:xmpp:forward:0}forwarded/message@from", []),
        // ".." goes back up; matches that meet at one parent count once.
        QueryCase(
            "prosodyStockPublish", "/<type=set>/" + pubsub + "/publish/../../@id",
            [.string("20ab3be121224fa65a880106ccfceb8b604b04115231312b10068684274d8999")]),
        QueryCase("prosodyStockPublish", pubsub + "/*/..$", [.string("pubsub")]),
        QueryCase("prosodyStockPublish", "..", []),
        QueryCase(
            "prosodyBridgeCarbon", forwardedMessage + "/{urn:xmpp:delay}delay/../@from",
            [.string("alice@localhost")]),
        // The stanza error's condition, read by exclusion (Monal's stream-error idiom).
        QueryCase(
            "ejabberdErrorReply", "error/{urn:ietf:params:xml:ns:xmpp-stanzas}!text$",
            [.string("resource-constraint")]),
        QueryCase(
            "ejabberdDiscoReply",
            "{http://jabber.org/protocol/disco#info}query/identity<category=pubsub><type=push>@name",
            [.string("apush")]),
        QueryCase(
            "ejabberdDiscoReply", "{http://jabber.org/protocol/disco#info}query/identity<category=client>@name", []),
        QueryCase(
            "ejabberdDiscoQuery",
            "{http://jabber.org/protocol/disco#info}query<node=urn:xmpp:delegation:1::urn:xmpp:push:0>$",
            [.string("query")]),
        // A value that does not convert is left out.
        QueryCase("prosodyStockPublish", "@id|int", []),
        QueryCase("prosodyStockPublish", "@type|bool", []),
        QueryCase("prosodyStockPublish", "@type|datetime", []),
        QueryCase("prosodyStockPublish", "@to|base64", []),
    ]

    @Test(arguments: fixtureCases)
    func findsInRealCaptures(_ testCase: QueryCase) throws {
        let stanza = try #require(Fixtures.all[testCase.fixture])
        #expect(stanza.find(testCase.path) == testCase.expected)
        #expect(stanza.findFirst(testCase.path) == testCase.expected.first)
    }

    @Test func returnsElementsWithoutAnExtraction() throws {
        let stanza = Fixtures.prosodyBridgeRegistered
        let enable = try #require(stanza.elements.first?.elements.first)
        #expect(stanza.findElement("{urn:xmpp:apush:bridge:0}registered/{urn:xmpp:push:0}enable") == enable)
        #expect(stanza.findElements("{urn:xmpp:apush:bridge:0}registered/{*}*") == [enable])
        let form = try #require(enable.elements.first)
        #expect(stanza.findElement(#"{urn:xmpp:apush:bridge:0}registered/{urn:xmpp:push:0}enable/\submit\"#) == form)
        #expect(stanza.findElement(#"{urn:xmpp:apush:bridge:0}registered/{urn:xmpp:push:0}enable/\result\"#) == nil)
    }

    @Test func typedReadersConvertStringResults() {
        let stanza = Fixtures.prosodyBridgePublish
        #expect(stanza.findInt(summary + #"@message-count\"#) == 1)
        #expect(stanza.findInt(summary + #"@message-count\|int"#) == 1)
        #expect(stanza.findBool(notification + "/{urn:xmpp:apush:bridge:0}account@important") == true)
        #expect(
            stanza.findDate(forwardedMessage + "/{urn:xmpp:delay}delay@stamp")
                == Date(timeIntervalSince1970: 1_795_968_361))
        #expect(stanza.findBytes(publishOptions + #"@apushEncryptionPublicKey\"#) == Fixtures.publicKeyBytes)
        #expect(stanza.findString(forwardedMessage + "/body#") == "Are you there?")
        #expect(stanza.findStrings(forwardedMessage + "/{urn:xmpp:sid:0}*@id") == ["m1", "cYxKc5Y3-RR7bAh-iqjNqYcw"])
        #expect(stanza.findInt("@id") == nil)
        #expect(stanza.findString(pubsub) == nil)
        #expect(stanza.check(forwardedMessage + "/{urn:xmpp:receipts}request"))
        #expect(!stanza.check(forwardedMessage + "/{urn:xmpp:hints}store"))
    }

    @Test func segmentWithoutNamespaceTakesTheParents() {
        // Monal's example 1: only the body in the message's namespace is read.
        let message = stanza(
            node(
                "message", xmlns: Namespace.client, ["from": "test@example.org"],
                node("body", text: "Message text"),
                node("body", xmlns: "urn:some:different:namespace", text: "Not this")))
        #expect(message.find("body#") == [.string("Message text")])
        #expect(message.find("{*}body#") == [.string("Message text"), .string("Not this")])
        #expect(message.find("{urn:some:different:namespace}body#") == [.string("Not this")])
    }

    @Test func readsFieldsOfMultiItemForms() {
        let results = stanza(
            node(
                "iq", ["type": "result"],
                node(
                    "query", xmlns: "urn:example:search",
                    node(
                        "x", xmlns: Namespace.dataForms, ["type": "result"],
                        field("FORM_TYPE", type: "hidden", "urn:example:search"),
                        node("reported", field("jid", type: "jid-single"), field("expire")),
                        node("item", field("jid", "a@example.com"), field("expire", "2002-09-10T23:08:25+02:00")),
                        node("item", field("jid", "b@example.com"), field("expire", "2002-09-10T23:08:25.5Z"))))))
        #expect(
            results.find(#"{urn:example:search}query/\{urn:example:search}result[1]@jid\"#) == [
                .string("b@example.com")
            ])
        #expect(
            results.find(#"{urn:example:search}query/\[0]@expire\|datetime"#)
                == [.date(Date(timeIntervalSince1970: 1_031_699_305 - 7200))])
        #expect(
            results.find(#"{urn:example:search}query/\[1]@expire\|datetime"#)
                == [.date(Date(timeIntervalSince1970: 1_031_699_305.5))])
        #expect(results.find(#"{urn:example:search}query/\[2]@jid\"#) == [])
        #expect(results.find(#"{urn:example:search}query/\@jid\"#) == [])
    }

    @Test func uploadLimitFromADiscoExtension() {
        // Monal's example 6: a XEP-0128 form inside disco#info.
        let info = stanza(
            node(
                "iq", ["type": "result"],
                node(
                    "query", xmlns: Namespace.discoInfo,
                    node("identity", ["category": "store", "type": "file"]),
                    node(
                        "x", xmlns: Namespace.dataForms, ["type": "result"],
                        field("FORM_TYPE", type: "hidden", "urn:xmpp:http:upload:0"),
                        field("max-file-size", "5242880")))))
        #expect(
            info.findInt(
                #"{http://jabber.org/protocol/disco#info}query/\{urn:xmpp:http:upload:0}result@max-file-size\|int"#)
                == 5_242_880)
    }

    @Test func malformedFormsMatchNothing() {
        let message = stanza(
            node(
                "message",
                node("x", xmlns: Namespace.dataForms, field("FORM_TYPE", "urn:a"), field("f", "1"))))
        #expect(message.find(#"\@f\"#) == [])
    }

    @Test(
        arguments: [
            ("@n|int", "42", [QueryValue.int(42)]),
            ("@n|int", " -7 ", [.int(-7)]),
            ("@n|int", "4.2", []),
            ("@n|uint", "-7", []),
            ("@n|uint", "0", [.int(0)]),
            ("@n|bool", "1", [.bool(true)]),
            ("@n|bool", "true", [.bool(true)]),
            ("@n|bool", "0", [.bool(false)]),
            ("@n|bool", "false", [.bool(false)]),
            ("@n|bool", "yes", []),
            ("@n|datetime", "2002-09-10T23:08:25Z", [.date(Date(timeIntervalSince1970: 1_031_699_305))]),
            ("@n|datetime", "2023-02-29T00:00:00Z", []),
            ("@n|base64", "AAEC/w==", [.bytes([0, 1, 2, 255])]),
            ("@n|base64", "AAEC\n/w==", [.bytes([0, 1, 2, 255])]),
            ("@n|base64", "", [.bytes([])]),
            ("@n|base64", "!!", []),
            ("@n", "raw", [.string("raw")]),
            ("$", "", [.string("e")]),
            ("#", "", [.string("")]),
        ] as [(String, String, [QueryValue])])
    func convertsValues(path: String, attribute: String, expected: [QueryValue]) {
        let element = Element("e", ["n": attribute])
        #expect(element.find(path) == expected)
    }

    @Test(arguments: [
        ("", "the path is empty"),
        ("/", "the path selects nothing"),
        ("a/", "expected an element name"),
        ("a//b", "expected an element name"),
        ("{urn:x", "unterminated '{'"),
        ("{}a", "empty namespace"),
        ("{urn:x}", "must be followed by an element name"),
        ("{urn:x}@a", "must be followed by an element name"),
        ("!", "'!' must be followed"),
        ("a<b", "unterminated '<'"),
        ("a<>", "a filter needs an attribute name"),
        ("<a=b>", "a filter must follow an element name"),
        ("@", "'@' must be followed by an attribute name"),
        ("a@b/c", "must end the path"),
        ("a#/b", "must end the path"),
        ("a$b", "must end the path"),
        ("..x", "'..' takes no name or filter"),
        (#"..\@f\"#, "cannot follow '..'"),
        ("a|int", "a conversion needs an extraction"),
        ("a@b|float", "unknown conversion 'float'"),
        (#"\@f"#, #"must end with '\'"#),
        (#"\bogus@f\"#, "unknown form type 'bogus'"),
        (#"\{}@f\"#, "empty FORM_TYPE"),
        (#"\[x]@f\"#, "an item index"),
        (#"\[0]\"#, "an item index needs a field"),
        (#"\\|int"#, "names a field"),
    ])
    func rejectsMalformedPaths(path: String, reason: String) {
        #expect {
            try Query(path)
        } throws: { error in
            (error as? QueryError).map { $0.reason.contains(reason) && $0.path == path } ?? false
        }
    }

    @Test func reportsWhereThePathIsWrong() {
        #expect(
            throws: QueryError(path: "a@b/c", offset: 3, reason: "an extraction (@, #, $, \\…\\) must end the path")
        ) {
            try Query("a@b/c")
        }
    }

    @Test func compiledQueriesAreCachedAndComparable() throws {
        let path = pubsub + "/publish@node"
        let compiled = try Query(path)
        #expect(try Query.cached(path) == compiled)
        #expect(try Query.cached(path) == compiled)
        #expect(compiled.description == path)
        #expect(Fixtures.prosodyStockPublish.find(compiled) == [.string("tok123")])
        #expect(Fixtures.prosodyStockPublish.findFirst(compiled) == .string("tok123"))
        #expect(throws: QueryError.self) { try Query.cached("a|int") }
    }

    /// The two middle ones are what EventClassifier once built from a room's JID: a combining mark
    /// fuses with "=", a prepend character with ">", and the path no longer parses.
    @Test(arguments: [
        "a|int", "stanza-id<by=\u{0301}crew@muc.localhost>@id", "stanza-id<by=crew@muc.localhost\u{0D4E}>@id",
        "{", "a@b/c", "",
    ])
    func anInvalidPathMatchesNothingAndNeverStopsTheProgram(_ path: String) {
        #expect(throws: QueryError.self) { try Query(path) }
        let element = Element("e", [:], children: [Element("a", ["b": "c"])])
        #expect(element.find(path).isEmpty)
        #expect(element.findString(path) == nil)
        #expect(!element.check(path))
        #expect(element.findInt(path) == nil)
    }

    @Test func theCacheOfPathsStaysBoundedWhateverIsLookedUp() throws {
        let element = Element("e")
        for index in 0..<(Query.cacheLimit + 10) {
            _ = element.find("a<id=\(index)>@id")
        }
        _ = element.find("a<id=" + String(repeating: "x", count: 100_000) + ">@id")
        let (count, bytes) = Query.cacheSize
        #expect(count <= Query.cacheLimit)
        #expect(bytes <= Query.cacheLimit * Query.cacheablePathBytes)
        // A literal path is still served from the cache.
        _ = element.find(pubsub + "/publish@node")
        #expect(Query.isCached(pubsub + "/publish@node"))
    }
}
