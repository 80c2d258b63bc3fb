import Foundation
import Testing

@testable import Logging

@Suite struct LogSinksTests {
    private func event(_ message: String) -> LogEvent {
        LogEvent(level: .info, label: "link", message: message, metadata: [:], file: #fileID, line: #line)
    }

    @Test(arguments: ["a\nb", "a\rb", "a\r\nb", "a\u{2028}b", "a\u{85}b", "a\u{0B}b", "a\u{0C}b"])
    func aMessageWithALineBreakStaysOneLine(message: String) {
        let line = StandardErrorLogSink.line(for: event(message))
        #expect(line.hasSuffix("INFO link: a b\n"))
        #expect(line.filter(\.isNewline) == "\n")
    }
}

extension LogSinksTests {
    @Test(arguments: [
        "a\nb", "a\rb", "a\r\nb", "a\u{2028}b", "a\u{85}b", "quote \" and \\ back", "tab\there", "\u{01}",
    ])
    func aJSONLineIsOneObjectOnOneLineThatReadsBack(message: String) throws {
        var event = event(message)
        event.metadata = ["fingerprint": "#1a2b3c4d", "attempt": "2"]
        let line = StandardErrorLogSink.line(for: event, format: .json)
        #expect(line.hasSuffix("}\n"))
        #expect(line.filter(\.isNewline) == "\n")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["label"] as? String == "link")
        #expect(object["metadata"] as? [String: String] == ["fingerprint": "#1a2b3c4d", "attempt": "2"])
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
        let read = try #require(object["message"] as? String)
        #expect(read == message || read == message.map { $0.isNewline ? " " : $0 }.reduce("") { $0 + String($1) })
    }

    @Test func aJSONLineHasTheTextLinesFieldsInAFixedOrder() {
        let json = event("connected").json(time: "2026-01-01T00:00:00.000Z")
        #expect(json == #"{"time":"2026-01-01T00:00:00.000Z","level":"info","label":"link","message":"connected"}"#)
    }
}
