import Logging
import Testing

@Suite struct LoggerTests {
    @Test func eventsBelowTheLevelAreNotBuiltOrSent() {
        let sink = InMemoryLogSink()
        let logger = Logger(label: "test", level: .notice, sink: sink)
        var built = false
        logger.debug(
            {
                built = true
                return "hidden"
            }())
        logger.warning("shown")
        #expect(!built)
        #expect(sink.events.map(\.message) == ["shown"])
    }

    @Test(arguments: Logger.Level.allCases)
    func levelsParseFromTheirNames(level: Logger.Level) {
        #expect(Logger.Level(name: level.description) == level)
        #expect(Logger.Level(name: level.description.uppercased()) == level)
    }

    @Test func unknownLevelNamesAreRejected() {
        #expect(Logger.Level(name: "verbose") == nil)
    }

    @Test func childLoggersKeepTheSinkAndMergeMetadata() {
        let sink = InMemoryLogSink()
        let parent = Logger(label: "host", level: .debug, metadata: ["a": "1"], sink: sink)
        let child = parent.child(label: "apush", metadata: ["b": "2"])
        child.info("hello", metadata: ["a": "3"])
        let event = try! #require(sink.events.first)
        #expect(event.label == "apush")
        #expect(event.metadata == ["a": "3", "b": "2"])
        #expect(event.formatted == "INFO apush: hello a=3 b=2")
    }
}
