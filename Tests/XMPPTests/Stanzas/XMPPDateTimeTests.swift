import Foundation
import Testing

@testable import XMPP

@Suite struct XMPPDateTimeTests {
    @Test(
        arguments: [
            ("2002-09-10T23:08:25Z", Date(timeIntervalSince1970: 1_031_699_305)),
            ("2002-09-10T23:08:25.123Z", Date(timeIntervalSince1970: 1_031_699_305.123)),
            ("2002-09-10T17:08:25-06:00", Date(timeIntervalSince1970: 1_031_699_305)),
            ("20020910T23:08:25", Date(timeIntervalSince1970: 1_031_699_305)),
            ("1969-12-31T23:59:59Z", Date(timeIntervalSince1970: -1)),
            ("2024-02-29T00:00:00Z", Date(timeIntervalSince1970: 1_709_164_800)),
            ("2023-02-29T00:00:00Z", nil),
            ("2002-13-10T23:08:25Z", nil),
            ("2002-09-10T24:08:25Z", nil),
            ("2002-09-10", nil),
            ("2002-09-10T23:08:25+2:00", nil),
            ("2002-09-10T23:08:25Zjunk", nil),
        ] as [(String, Date?)])
    func parsesXEP0082AndLegacyXEP0091(_ text: String, expected: Date?) {
        #expect(XMPPDateTime.parse(text) == expected)
    }
}
