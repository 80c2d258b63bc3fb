import Testing

@testable import APush

@Suite struct StringTrimmedTests {
    @Test(arguments: [("  a b\n", "a b"), ("", ""), ("x", "x"), ("\t\t", "")])
    func trimsWhitespace(_ text: String, expected: String) {
        #expect(text.trimmed == expected)
    }
}
