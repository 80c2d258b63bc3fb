import Foundation
import Testing

@testable import Logging

@Suite struct JSONObjectWriterTests {
    @Test(arguments: [
        ("plain", #""plain""#),
        (#"say "hi""#, #""say \"hi\"""#),
        (#"back\slash"#, #""back\\slash""#),
        ("line\nfeed\r\ttab", #""line\nfeed\r\ttab""#),
        ("\u{0}\u{1}\u{1f}", #""\u0000\u0001\u001f""#),
        ("Zoë 🎉 日本", "\"Zoë 🎉 日本\""),
        ("\u{7f}/", "\"\u{7f}/\""),
    ])
    func escapesStringsAsRFC8259Asks(_ text: String, expected: String) throws {
        let quoted = JSONObjectWriter.quoted(text)
        #expect(quoted == expected)
        let decoded = try JSONSerialization.jsonObject(with: Data("[\(quoted)]".utf8)) as? [String]
        #expect(decoded == [text])
    }

    @Test func keysKeepTheOrderTheyWereAddedIn() {
        var writer = JSONObjectWriter()
        writer.add("z", "last first")
        writer.add("a", 1)
        writer.add("m", true)
        writer.add("list", ["x", "y"])
        writer.addRaw("raw", "{}")
        #expect(writer.finish() == #"{"z":"last first","a":1,"m":true,"list":["x","y"],"raw":{}}"#)
    }
}
