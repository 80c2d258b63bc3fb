import Testing

@testable import PostgreSQL

@Suite struct DurationMillisecondsTests {
    @Test func fractionsOfAMillisecondAreDropped() {
        #expect(Duration.seconds(30).wholeMilliseconds == 30_000)
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.microseconds(2999).wholeMilliseconds == 2)
    }
}
