import Store
import Testing
import TestSupport

@testable import APush

@Suite struct TimeFormatTests {
    @Test(arguments: [
        (Timestamp?.none, "never"), (0, "1970-01-01 00:00:00 UTC"), (ManualClock.start, "2025-11-29 15:26:40 UTC"),
        (ManualClock.start + 999, "2025-11-29 15:26:40 UTC"), (1_782_745_200_000, "2026-06-29 15:00:00 UTC"),
    ])
    func timesAreShownInUTCToTheSecond(timestamp: Timestamp?, text: String) {
        #expect(TimeFormat.describe(timestamp) == text)
    }
}
