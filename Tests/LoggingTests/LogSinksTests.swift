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
